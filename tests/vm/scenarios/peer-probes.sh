#!/bin/bash
# RDMA probes between the two guests' daemons, for real, over Soft-RoCE: each rocewatchd
# names the other as its peer with both rails, and listens on every address so the other
# can call in (POST /api/v1/peer/rdma sets up the passive side). Then:
#   - the scheduled probes (rdma_write_lat every 10 s and tcp_lat every 5 s, on both
#     rails) run by themselves and succeed;
#   - node 2 asks its daemon (POST /api/v1/probes/run, with the token) for write bandwidth
#     on each rail and on both rails at once: the bytes each rail moved by the daemon's own
#     counter reading must match what the probe wrote (headers included) and the kernel's
#     tx_bytes around the call, and /metrics carries them per rail;
#   - UCX put latency and bandwidth between the daemons over whatever UCX picks, with
#     both versions and the lanes reported;
#   - node 1 deletes rail B's rxe device: RDMA to it over rail B fails while TCP over the
#     same rail works, and node 2's daemon says so (rdma_fails_tcp_works); with the device
#     back, the probe passes and the alert clears;
#   - rail B's cable is pulled under a bandwidth run: the run fails, node 2 ends node 1's
#     session at once (node 1 says so), and node 1 takes the next session straight away.
# vm-nodes: 2
# vm-timeout: 600
DAEMON_LISTEN=0.0.0.0:9879
DAEMON_FAST_CLEAR_EXTRA="rdma_fails_tcp_works"
. "$(dirname "$0")/lib.sh"

MSG=65536
# RoCE v2 bytes on the wire per 64 KiB write at path MTU 4096, as tx_bytes counts them
# (see probes.sh): 16 packets x (14 + 20 + 8 + 12 + 4) + a RETH (16) beyond the payload.
WIRE_PER_MSG=$((MSG + 16 * 58 + 16))
OTHER=$PEER

# wire_ok DESC COUNTED PAYLOAD PKTS: COUNTED tx bytes hold PAYLOAD bytes of 64 KiB writes:
# at least their wire size (0.5% for rounding), at most what the packets rxe says it sent
# in the same window (hw_counters/sent_pkts, go-back-N resends included: QEMU's UDP
# sockets drop frames when the host is busy) can carry, plus 64 KiB for the HTTP control
# exchange. Anything beyond is traffic the probe did not send, or a rail counted twice.
MAX_PER_PKT=$((4096 + 58 + 16 + 4))
wire_ok() {
    local desc=$1 counted=$2 payload=$3 pkts=$4 expect low high ratio data_pkts
    expect=$((payload / MSG * WIRE_PER_MSG))
    data_pkts=$((payload / 4096))
    low=$((expect - expect / 200))
    high=$((pkts * MAX_PER_PKT + 65536))
    ratio=$(awk -v c="$counted" -v e="$expect" 'BEGIN { printf "%.4f", e ? c / e : 0 }')
    if ((payload > 0 && counted >= low && counted <= high)); then
        pass "$desc: $counted bytes counted for $payload of payload ($expect on the wire, ratio $ratio; $pkts packets sent for $data_pkts data packets)"
    else
        fail "$desc: $counted bytes counted for $payload of payload ($expect on the wire, ratio $ratio, not in $low..$high; $pkts packets sent for $data_pkts data packets)"
    fi
    record "$desc: counted $counted, payload $payload, on the wire $expect, ratio $ratio, $pkts packets sent for $data_pkts data packets"
}

tx_bytes() { cat "/sys/class/net/$1/statistics/tx_bytes"; }

section "rxe devices"
rxe_on_every_rail
sync_point rxe-up

section "daemons that probe each other"
mkdir -p "$DAEMON_DIR"
(umask 077 && echo "$TOKEN" >"$DAEMON_DIR/token")
DAEMON_EXTRA_CONFIG=$(
    cat <<EOF
[probes]
token_file = "$DAEMON_DIR/token"
enabled = ["tcp_lat", "rdma_write_lat"]
latency_threshold = "10s"

[probes.tcp_lat]
interval = "5s"
jitter = "1s"
count = 50

[probes.rdma_lat]
interval = "10s"
jitter = "1s"
count = 100
timeout = "30s"

[probes.rdma_bw]
duration = "2s"
qps_per_rail = 2

[probes.ucx_lat]
count = 100
timeout = "30s"

$(peer_config)
EOF
)
# UCX's default pick here is rc_verbs plus ud_verbs on rxe0, whose UD wire-up did not finish
# within 12 s under TCG; rc_verbs for the data with tcp beside it for the wire-up does.
export UCX_TLS=${UCX_TLS:-rc_verbs,tcp}
start_daemon || { finish; exit; }
sync_point daemons-up 120

# The daemons start a few seconds apart, so a first probe may find the peer not yet
# listening (and say so); the schedule repeats them: each must succeed within a minute.
section "scheduled probes"
for rail in "${RAILS[@]}"; do
    for kind in tcp_lat rdma_write_lat; do
        t=0
        while [[ $(probe_latest "node$OTHER" "$rail" "$kind" | jq -r .success) != true ]] && ((t < 300)); do
            snooze 0.2
            t=$((t + 1))
        done
        PROBE=$(probe_latest "node$OTHER" "$rail" "$kind")
        check_eq "scheduled $kind to node$OTHER over $rail: success" true "$(jf .success)"
        if [[ $kind == rdma_write_lat ]]; then
            check_eq "scheduled $kind over $rail: iterations" 100 "$(jf .iterations)"
            check_eq "scheduled $kind over $rail: GID index (the rail's RoCE v2 IPv4 GID)" 1 "$(jf .info.gid_index)"
            record "scheduled rdma_write_lat node$NODE -> node$OTHER $rail: typical $(jf '.latency_seconds.typical * 1e6') us, p99 $(jf '.latency_seconds.p99 * 1e6') us ($(jf '.info["rail.'"$rail"'.path"]'))"
        fi
    done
done
sync_point scheduled-done 120

# Payload node 1's probe budget has charged its peers' sessions (side peer). The RDMA
# bandwidth runs node 2 makes below must add at least what they wrote: the serving side once
# charged them nothing (its result held WR counts, not bytes).
peer_bytes_charged() {
    query_daemon /metrics | awk '/^rocewatch_probe_budget_bytes_total\{side="peer"\} / { printf "%.0f\n", $2 }'
}
if ((NODE == 1)); then PEER_BYTES0=$(peer_bytes_charged); fi
sync_point budget-before 60

RDMA_BW_BYTES=0
if ((NODE == 2)); then
    for rail in "${RAILS[@]}"; do
        section "write bandwidth on $rail through the daemons"
        a0=$(tx_bytes "$rail")
        k0=$(hw_counter "${RAIL_RXE[$rail]}" sent_pkts)
        run_probe "bw-$rail" "{\"peer\": \"node1\", \"rail\": \"$rail\", \"kind\": \"rdma_write_bw\"}"
        a1=$(tx_bytes "$rail")
        k1=$(hw_counter "${RAIL_RXE[$rail]}" sent_pkts)
        check_eq "rdma_write_bw $rail: success" true "$(jf .success)"
        check_eq "rdma_write_bw $rail: 2 QPs (qps_per_rail)" 2 "$(jf .streams)"
        bytes=$(jf .bytes)
        if ((bytes > 0 && bytes % MSG == 0)); then pass "rdma_write_bw $rail: $bytes bytes in whole 64 KiB writes"; else fail "rdma_write_bw $rail: $bytes bytes"; fi
        gbps=$(jf '(.bandwidth_bytes_per_second // 0) * 8 / 1e9')
        if fgt "$gbps" 0 && flt "$gbps" 100; then pass "rdma_write_bw $rail: $gbps Gb/s"; else fail "rdma_write_bw $rail: $gbps Gb/s"; fi
        check_eq "rdma_write_bw $rail: path MTU" 4096 "$(jf .info.path_mtu)"
        check_eq "rdma_write_bw $rail: Soft-RoCE noted" true "$(jf .info.soft_roce)"
        wire_ok "rdma_write_bw $rail: the daemon's own $rail counter (data phase)" "$(jf ".bytes_per_rail.$rail // 0")" "$bytes" $((k1 - k0))
        wire_ok "rdma_write_bw $rail: kernel $rail tx_bytes around the call" $((a1 - a0)) "$bytes" $((k1 - k0))
        record "daemon rdma_write_bw node2 -> node1 $rail: $gbps Gb/s, $bytes bytes in $(jf .duration_seconds) s (POST answered in $PROBE_MS ms)"
        RDMA_BW_BYTES=$((RDMA_BW_BYTES + bytes))
    done

    section "write bandwidth on both rails at once through the daemons"
    a0=$(tx_bytes railA)
    b0=$(tx_bytes railB)
    ka0=$(hw_counter rxe0 sent_pkts)
    kb0=$(hw_counter rxe1 sent_pkts)
    run_probe multirail '{"peer": "node1", "rail": "", "kind": "rdma_multirail_bw"}'
    a1=$(tx_bytes railA)
    b1=$(tx_bytes railB)
    ka1=$(hw_counter rxe0 sent_pkts)
    kb1=$(hw_counter rxe1 sent_pkts)
    check_eq "rdma_multirail_bw: success" true "$(jf .success)"
    check_eq "rdma_multirail_bw: 2 rails x 2 QPs" 4 "$(jf .streams)"
    pa=$(jf '.bytes_per_stream[0]')
    pb=$(jf '.bytes_per_stream[1]')
    check_eq "rdma_multirail_bw: payload per rail adds up" "$(jf .bytes)" $((pa + pb))
    wire_ok "rdma_multirail_bw: the daemon's railA counter" "$(jf '.bytes_per_rail.railA // 0')" "$pa" $((ka1 - ka0))
    wire_ok "rdma_multirail_bw: the daemon's railB counter" "$(jf '.bytes_per_rail.railB // 0')" "$pb" $((kb1 - kb0))
    wire_ok "rdma_multirail_bw: kernel railA tx_bytes around the call" $((a1 - a0)) "$pa" $((ka1 - ka0))
    wire_ok "rdma_multirail_bw: kernel railB tx_bytes around the call" $((b1 - b0)) "$pb" $((kb1 - kb0))
    record "daemon rdma_multirail_bw node2 -> node1: $(jf '.bandwidth_bytes_per_second * 8 / 1e9') Gb/s; railA $(jf '.bytes_per_rail.railA') bytes, railB $(jf '.bytes_per_rail.railB') bytes"
    # Both rails carried their share, so no rail carried almost all of it.
    expect_no_alert rail_imbalance "node1:rdma_multirail_bw"
    RDMA_BW_BYTES=$((RDMA_BW_BYTES + $(jf .bytes)))
    echo "$RDMA_BW_BYTES" >"$SHARE/marks/rdma-bw-bytes"
    mark rdma-bw-counted

    section "probe metrics"
    metrics=$(query_daemon /metrics)
    echo "$metrics" | grep '^rocewatch_probe_' >"$RES/probe-metrics.txt"
    check_match "/metrics: multi-rail success" \
        'rocewatch_probe_success\{peer="node1",rail="",kind="rdma_multirail_bw"\} 1' "$metrics"
    for rail in "${RAILS[@]}"; do
        check_match "/metrics: bytes per rail $rail" \
            "rocewatch_probe_bytes_per_rail\\{peer=\"node1\",rail=\"$rail\",kind=\"rdma_multirail_bw\"\\} [1-9]" "$metrics"
        check_match "/metrics: rdma_write_bw $rail bandwidth" \
            "rocewatch_probe_bandwidth_bytes_per_second\\{peer=\"node1\",rail=\"$rail\",kind=\"rdma_write_bw\"\\} [0-9]" "$metrics"
    done

    section "UCX between the daemons (the transports and devices UCX picks)"
    for kind in ucx_put_lat ucx_put_bw; do
        run_probe "$kind" "{\"peer\": \"node1\", \"rail\": \"\", \"kind\": \"$kind\"}"
        check_eq "$kind: success" true "$(jf .success)"
        check_eq "$kind: both UCX versions" "$(jf .info.local_ucx_version) $(jf .info.local_ucx_version)" \
            "$(jf .info.local_ucx_version) $(jf .info.remote_ucx_version)"
        lanes=$(jf '.info.ucx_lanes // ""')
        if [[ -n $lanes ]]; then pass "$kind: lanes $lanes"; else fail "$kind: no lanes reported"; fi
        record "daemon $kind node2 -> node1: lanes $lanes, $(jf 'if .bandwidth_bytes_per_second then "\(.bandwidth_bytes_per_second * 8 / 1e9) Gb/s" else "typical \(.latency_seconds.typical * 1e6) us" end')"
    done
    # The daemon reads every rail's counter around a UCX bandwidth run. UCX puts its data
    # lane on one rail here (rc_verbs on rxe0; tcp on railB only for the wire-up), as NIXL did
    # on the DGX Spark pair: the rail imbalance must show, and be called out.
    ra=$(jf '.bytes_per_rail.railA // 0')
    rb=$(jf '.bytes_per_rail.railB // 0')
    record "ucx_put_bw bytes per rail: railA $ra, railB $rb"
    if [[ $lanes == *rxe0* && $lanes != *rxe1* ]]; then
        if ((ra > 9 * rb)); then pass "ucx_put_bw: railA carried $ra bytes, railB $rb (lanes $lanes)"; else fail "ucx_put_bw: railA $ra bytes, railB $rb with lanes $lanes"; fi
        expect_alert rail_imbalance "node1:ucx_put_bw" 10 warning || true
        record "rail_imbalance: $(jq -r .summary <<<"$ALERT")"
    else
        record "UCX used lanes $lanes: no single-rail expectation checked"
    fi
    mark bw-done
else
    if wait_mark rdma-bw-counted 300; then
        section "the probe budget charges the RDMA bandwidth sessions served"
        sent=$(cat "$SHARE/marks/rdma-bw-bytes")
        charged=0
        for _ in $(seq 50); do  # each serving session is charged as it ends
            charged=$(($(peer_bytes_charged) - PEER_BYTES0))
            ((charged >= sent)) && break
            snooze 0.2
        done
        if ((sent > 0 && charged >= sent)); then
            pass "node1's budget charged peers $charged bytes since, the RDMA bandwidth runs $sent of them"
        else
            fail "node1's budget charged peers $charged bytes since; node 2's RDMA bandwidth runs wrote $sent"
        fi
    fi
    wait_mark bw-done 300
fi
sync_point bw-done 300

section "RDMA fails while TCP works: rail B's rxe device gone on node 1"
if ((NODE == 1)); then
    check "rdma link delete rxe1" rdma link delete rxe1
    mark rxe1-gone
    wait_mark judged 180
    add_rxe rxe1 railB
    wait_port_state rxe1 ACTIVE 20 >/dev/null || fail "rxe1 not ACTIVE after re-adding it"
    wait_generation 2 10
    mark rxe1-back
else
    wait_mark rxe1-gone 60
    snooze 3  # node 1's daemon collects every second: its snapshot has lost rxe1
    run_probe tcp-railB '{"peer": "node1", "rail": "railB", "kind": "tcp_lat"}'
    check_eq "tcp_lat railB without rxe1 on node 1: success" true "$(jf .success)"
    run_probe rdma-railB-gone '{"peer": "node1", "rail": "railB", "kind": "rdma_write_lat"}'
    check_eq "rdma_write_lat railB without rxe1 on node 1: fails, refused by the peer" "false device_not_found" \
        "$(jf '"\(.success) \(.reason)"')"
    check_match "the reason names the peer's missing GID" "no RoCE v2 GID holds $(rail_ip railB 1)" "$(jf .detail)"
    expect_alert rdma_fails_tcp_works "node1/railB:rdma_write_lat" 10 critical || true
    record "rdma_fails_tcp_works: $(jq -r .summary <<<"$ALERT")"
    expect_no_alert rdma_fails_tcp_works "node1/railA:rdma_write_lat"
    mark judged
    wait_mark rxe1-back 120
    run_probe rdma-railB-back '{"peer": "node1", "rail": "railB", "kind": "rdma_write_lat"}'
    check_eq "rdma_write_lat railB with rxe1 back: success" true "$(jf .success)"
    expect_cleared rdma_fails_tcp_works "node1/railB:rdma_write_lat" 15
fi
sync_point rxe1-done 240

# Rail B's cable pulled under a bandwidth run: node 2's QPs give up (retries exhausted) and
# its daemon ends node 1's session over the control port (rail A) at once. Without that,
# node 1 would wait out the session's deadline for a closing write that cannot come, and
# refuse every peer's probe meanwhile.
section "a rail pulled mid-run: the peer's session ends at once"
if ((NODE == 2)); then
    # The pull must land while the run is under way. On a loaded host the QMP request can
    # take longer than the 2 s run: a run that ended before the link went down proves
    # nothing, so the link comes back and the run starts again (five tries).
    for attempt in 1 2 3 4 5; do
        k0=$(hw_counter rxe1 sent_pkts)
        run_probe pull-railB '{"peer": "node1", "rail": "railB", "kind": "rdma_write_bw"}' &
        pid=$!
        # Pull once the data phase is under way: rxe1 has sent a thousand packets (a latency
        # probe sends a few hundred; the 2 s bandwidth run thousands).
        t=0
        while (($(hw_counter rxe1 sent_pkts) - k0 < 1000 && t < 200)); do
            snooze 0.02
            t=$((t + 1))
        done
        log "pulling rail B after $(($(hw_counter rxe1 sent_pkts) - k0)) packets (try $attempt)"
        host_request set_link railB off
        running=0
        kill -0 "$pid" 2>/dev/null && running=1
        wait "$pid"
        ((running)) && break
        log "try $attempt: the run ended before the link went down (host slow to pull): link back, again"
        ((attempt < 5)) || break
        host_request set_link railB on
        wait_port_state rxe1 ACTIVE 20 >/dev/null || fail "rxe1 not ACTIVE again after the link returned"
        snooze 2  # node 1's session host frees the finished session
    done
    failed_at=${EPOCHREALTIME/./}
    PROBE=$(cat "$RES/pull-railB.json")
    [[ -n $PROBE ]] || PROBE='{}'
    check_eq "rdma_write_bw railB through the pull: fails" false "$(jf .success)"
    check_match "rdma_write_bw railB: the writes failed on the wire (the session was under way)" \
        "retry counter exceeded|flush" "$(jf .detail)"
    record "rail B pulled mid-run: $(jf .reason): $(jf .detail) after $(jf .duration_seconds) s"
    run_probe after-pull '{"peer": "node1", "rail": "railA", "kind": "rdma_write_lat"}'
    check_eq "rdma_write_lat railA right after: node 1 took the session (not peer_busy)" \
        "true null" "$(jf '"\(.success) \(.reason)"')"
    record "the next session, $(((${EPOCHREALTIME/./} - failed_at) / 1000)) ms after the failure: $(jf .success) $(jf .reason)"
fi
plug_back railB rxe1 pull-done
if ((NODE == 1)); then
    check_match "node 1's daemon: the session was ended early by node 2" \
        "RDMA session [0-9a-f]{16} ended early by $(rail_ip railA 2)" "$(cat "$OUT/rocewatchd.log")"
fi
sync_point pull-done 120

save_daemon_state final
stop_daemon
finish
