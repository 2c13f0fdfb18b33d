#!/bin/bash
# Healthy dual rail: two guests, rails A and B at MTU 9000, an rxe device per rail.
# The kernel's view (rdma link, ibv_devinfo, sysfs) must show both devices ACTIVE with
# the RoCE v2 IPv4 GID at index 1; RDMA write bandwidth and latency run per rail. The
# daemon must agree with the kernel field by field (ports: sysfs, rdma link, ibv_devinfo;
# interfaces: ip -j and sysfs), show the same in /metrics, and raise nothing.
# vm-nodes: 2
# vm-timeout: 420
. "$(dirname "$0")/lib.sh"

section "no RDMA device yet"
# Before the first rdma link add, /sys/class/infiniband lists no device: what a node whose
# RDMA driver is not loaded looks like. Not healthy: no_rdma_device, critical, and --once
# exits 2 (with no expect.rails; with them port_down names each missing device).
if daemon_present; then
    check_eq "no RDMA device before rdma link add" "" "$(ls /sys/class/infiniband 2>/dev/null)"
    DAEMON_RAILS="" daemon_config >"$RES/rocewatch-no-rails.toml"
    once=$("$ROCEWATCHD" --once --config "$RES/rocewatch-no-rails.toml" 2>>"$OUT/rocewatchd.log")
    check_eq "rocewatchd --once with no RDMA device: exit status 2 (critical)" 2 "$?"
    check_eq "rocewatchd --once with no RDMA device: its alerts" "no_rdma_device class/infiniband critical" \
        "$(jq -r '.alerts[] | "\(.rule) \(.object) \(.severity)"' <<<"$once")"
fi

section "rxe devices"
rxe_on_every_rail
for rail in "${RAILS[@]}"; do
    check_rxe_healthy "${RAIL_RXE[$rail]}" "$rail" "$(rail_ip "$rail")"
done
# What one pass over a port's GID table costs in this guest (rxe has 1024 slots a port;
# a collector that reads them all pays this every cycle).
t0=${EPOCHREALTIME/./}
cat "$(port_dir rxe0)"/gids/* >/dev/null
record "reading rxe0's $(ls "$(port_dir rxe0)/gids" | wc -l) gids/N files with one cat: $(((${EPOCHREALTIME/./} - t0) / 1000)) ms"
ibv_devinfo -v >"$RES/ibv_devinfo.txt" 2>&1
rdma link show >"$RES/rdma-link.txt" 2>&1
section "lldpd on the rails"
LLDP=no
start_lldpd && LLDP=yes
sync_point rxe-up

section "IP reachability at MTU 9000"
for rail in "${RAILS[@]}"; do
    check "$rail: ping the peer with 9000-byte packets" ping_jumbo "$(rail_ip "$rail" "$PEER")"
done
sync_point ping-done

section "perftest per rail"
# bw_usable TAG: this guest's ib_write_bw output for TAG has all its iterations and a
# non-zero average.
bw_usable() {
    local line bytes iters peak avg
    line=$(perftest_result_line "$RES/$1.node$NODE.txt") || return 1
    read -r bytes iters peak avg _ <<<"$line"
    [[ $iters == "$PERF_ITERS_BW" ]] && fgt "$avg" 0
}
declare -A before
for rail in "${RAILS[@]}"; do
    before[$rail]=$(hw_counter "${RAIL_RXE[$rail]}" sent_pkts)
done
for rail in "${RAILS[@]}"; do
    dev=${RAIL_RXE[$rail]}
    tag=bw-$rail
    perftest_run ib_write_bw "$rail" "$tag"
    # perftest once exited 0 on both guests with "65536 200 0.00 0.00" for railB (CI, the
    # same run's railA fine, the next run fine): a yardstick that measured nothing is run
    # once more, on both guests together, and the log says so; a second zero fails.
    bw_usable "$tag" || mark "$tag.unusable.node$NODE"
    sync_point "$tag.judged"
    if compgen -G "$SHARE/marks/$tag.unusable.node*" >/dev/null; then
        log "ib_write_bw on $rail measured nothing on a guest (here: $(perftest_result_line "$RES/$tag.node$NODE.txt" || echo 'no result line')); running it once more"
        record "ib_write_bw $rail $dev: first run measured nothing, run again"
        tag=bw-$rail-again
        perftest_run ib_write_bw "$rail" "$tag"
    fi
    if bw_usable "$tag"; then
        read -r bytes iters peak avg _ <<<"$(perftest_result_line "$RES/$tag.node$NODE.txt")"
        pass "ib_write_bw on $rail ($dev): $iters x $bytes B, average $avg MB/s"
        record "ib_write_bw $rail $dev: ${bytes}B x $iters, peak $peak MB/s, average $avg MB/s"
    elif line=$(perftest_result_line "$RES/$tag.node$NODE.txt"); then
        fail "ib_write_bw on $rail: no usable figures: $line"
    else
        fail "ib_write_bw on $rail printed no result: $(tail -3 "$RES/$tag.node$NODE.txt")"
    fi
    tag=lat-$rail
    if perftest_run ib_write_lat "$rail" "$tag"; then
        line=$(perftest_result_line "$RES/$tag.node$NODE.txt")
        read -r bytes iters tmin _ typical avg _ p99 _ <<<"$line"
        if [[ $iters == "$PERF_ITERS_LAT" ]] && fgt "$typical" 0; then
            pass "ib_write_lat on $rail ($dev): typical $typical us"
            record "ib_write_lat $rail $dev: ${bytes}B x $iters, min $tmin us, typical $typical us, avg $avg us, p99 $p99 us"
        else
            fail "ib_write_lat on $rail: no usable figures: $line"
        fi
    else
        fail "ib_write_lat on $rail printed no result: $(tail -3 "$RES/$tag.node$NODE.txt")"
    fi
done
for rail in "${RAILS[@]}"; do
    dev=${RAIL_RXE[$rail]}
    after=$(hw_counter "$dev" sent_pkts)
    if ((after > before[$rail])); then
        pass "$dev hw_counters/sent_pkts rose by $((after - before[$rail]))"
    else
        fail "$dev hw_counters/sent_pkts did not rise ($after)"
    fi
    # completer_retry_err is not judged: under TCG the guests are slow enough that the
    # requester times out and retries now and then (seen: 1 to 7 per run).
    for c in retry_exceeded_err link_downed; do
        check_eq "$dev hw_counters/$c" 0 "$(hw_counter "$dev" "$c")"
    done
    record "$dev hw_counters: $(rdma statistic show link "$dev/1" | sed 's/^link [^ ]* //')"
done
sync_point perftest-done

if ((NODE == 1)); then
    section "sysfs snapshot"
    snapshot_rxe_sysfs "$RES/sysfs-rxe-real" rxe0 rxe1
    check "sysfs snapshot has rxe0 port state" test -s "$RES/sysfs-rxe-real/class/infiniband/rxe0/ports/1/state"
fi

if [[ $LLDP == yes ]]; then
    # Each guest's lldpd must hear the other on both rails before the daemon asks (it asks at
    # start, then every 30 s).
    lldpcli -u "$LLDPD_SOCKET" update >/dev/null
    t=0
    until [[ $(lldp_neighbour railA) == "node$PEER "* && $(lldp_neighbour railB) == "node$PEER "* ]] || ((t > 300)); do
        ((t % 50 == 49)) && lldpcli -u "$LLDPD_SOCKET" update >/dev/null
        snooze 0.1
        t=$((t + 1))
    done
    for rail in "${RAILS[@]}"; do
        check_match "lldpd hears node$PEER on $rail" "^node$PEER " "$(lldp_neighbour "$rail")"
    done
fi
sync_point lldp-heard

section "rocewatchd against the kernel"
if start_daemon; then
    expect_health healthy
    expect_no_alerts
    status=$(query_daemon /api/v1/status)
    check_eq "rocewatchd: devices and ports up (kernel: $(ls /sys/class/infiniband | tr '\n' ' '))" \
        "$(ls /sys/class/infiniband | wc -l) 2" "$(jq -r '"\(.counts.devices) \(.counts.ports_up)"' <<<"$status")"
    collectors="sysfs=true verbs=true netlink=true host=true state=true"
    [[ $LLDP == yes ]] && collectors="sysfs=true verbs=true netlink=true host=true lldp=true state=true"
    check_eq "rocewatchd: every collector succeeded" "$collectors" \
        "$(jq -r '[.collectors[] | "\(.name)=\(.success)"] | join(" ")' <<<"$status")"
    if [[ $LLDP == yes ]]; then
        for rail in "${RAILS[@]}"; do
            # The daemon's neighbour equals lldpcli's: system name, port ID (the peer's MAC),
            # port description (the peer's netdev), and the port a person is told to look at.
            read -r name port_id descr <<<"$(lldp_neighbour "$rail")"
            expect_interface "$rail" '.lldp | "\(.system_name) \(.port_id) \(.port_description)"' \
                "$name $port_id $descr"
            expect_interface "$rail" '.lldp | "\(.switch) \(.switch_port) \(.port_id_subtype) \(.neighbours)"' \
                "node$PEER $rail mac 1"
            check_match "rocewatchd /metrics: the LLDP neighbour of $rail" \
                "rocewatch_link_lldp_neighbor_info\\{netdev=\"$rail\",switch=\"node$PEER\",switch_port=\"$rail\"," \
                "$(query_daemon /metrics)"
        done
    fi
    for rail in "${RAILS[@]}"; do
        dev=${RAIL_RXE[$rail]}
        ip=$(rail_ip "$rail")
        # state, phys_state, rate, active/max MTU (verbs), width, speed, netdev, GID table,
        # hw_counters, node GUID: the daemon's port equals sysfs, rdma link and ibv_devinfo
        expect_port_matches_kernel "$dev" ACTIVE
        expect_roce_gid "$dev" 1 "$ip"
        # that GID table (equal to sysfs' above) came through ibv_query_gid_table, not a file a slot
        check_eq "rocewatchd: $dev/1 GID table read through verbs" verbs \
            "$(query_daemon "/api/v1/devices/$dev" | jq -r '.ports[0].gids_source')"
        # MTU, operstate, carrier, MAC, addresses: the daemon's interface equals ip -j and sysfs
        expect_link_matches_kernel "$rail"
        expect_interface "$rail" mtu 9000
        expect_interface "$rail" operstate up
        expect_interface "$rail" rdma "[{\"device\":\"$dev\",\"port\":1,\"roce_v2_gid_index\":1,\"state_name\":\"ACTIVE\"}]"
        labels="device=\"$dev\",port=\"1\""
        expect_metric "rocewatch_rdma_port_up{$labels} 1" \
            "rocewatch_rdma_port_state{$labels} 4" \
            "rocewatch_rdma_port_phys_state{$labels} 5" \
            "rocewatch_rdma_port_active_mtu_bytes{$labels} 4096" \
            "rocewatch_rdma_port_max_mtu_bytes{$labels} 4096" \
            "rocewatch_rdma_port_rate_bytes_per_second{$labels} 12500000000" \
            "rocewatch_rdma_port_info{$labels,link_layer=\"Ethernet\",netdev=\"$rail\"} 1" \
            "rocewatch_rdma_port_roce_v2_gid_index{$labels,address=\"$ip\"} 1" \
            "rocewatch_rdma_port_hw_counters_total{$labels,counter=\"sent_pkts\"} $(hw_counter "$dev" sent_pkts)" \
            "rocewatch_rdma_port_hw_counters_total{$labels,counter=\"rcvd_pkts\"} $(hw_counter "$dev" rcvd_pkts)" \
            "rocewatch_rdma_port_hw_counters_total{$labels,counter=\"link_downed\"} 0" \
            "rocewatch_link_mtu_bytes{netdev=\"$rail\"} 9000" \
            "rocewatch_link_up{netdev=\"$rail\"} 1" \
            "rocewatch_link_carrier{netdev=\"$rail\"} 1"
        # rxe has no counters/ directory: no series, never a 0
        expect_no_metric "rocewatch_rdma_port_counters_total{$labels"
        expect_no_metric "rocewatch_rdma_port_data_transmitted_bytes_total{$labels"
    done
    save_daemon_state healthy
fi
sync_point finished
finish
