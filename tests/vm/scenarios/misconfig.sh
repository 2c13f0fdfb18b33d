#!/bin/bash
# Misconfiguration on node 1, node 2 left healthy as the control:
#   - rail B at MTU 1500 (node 2's end stays at 9000): RoCE active_mtu drops to 1024;
#   - a second interface (extra0, one end of a veth pair) with an address in rail A's
#     subnet: two routes to 10.10.1.0/24;
#   - an rxe device (rxe2, on the other veth end) with no IPv4 address, so no RoCE v2
#     IPv4 GID.
# The daemon (node 1: rails rxe0 rxe1 rxe2; node 2: rxe0 rxe1) must raise one alert per
# fault naming the right object, with details matching the kernel, on node 1, and
# nothing on node 2.
# vm-nodes: 2
# vm-timeout: 360
. "$(dirname "$0")/lib.sh"

section "rxe devices"
rxe_on_every_rail
sync_point rxe-up

if ((NODE == 2)); then
    section "control: node 2 stays healthy"
    for rail in "${RAILS[@]}"; do
        check_rxe_healthy "${RAIL_RXE[$rail]}" "$rail" "$(rail_ip "$rail")"
    done
fi

if ((NODE == 1)); then
    section "rail B at MTU 1500"
    check "railB mtu 1500" ip link set railB mtu 1500
    check_eq "railB MTU" 1500 "$(cat /sys/class/net/railB/mtu)"
    wait_port_state rxe1 ACTIVE 10 >/dev/null || fail "rxe1 not ACTIVE after the MTU change"
    info=$(ibv_devinfo -d rxe1)
    check_match "rxe1: active_mtu 1024 at netdev MTU 1500" "active_mtu:[[:space:]]+1024 \(3\)" "$info"
    check_match "rxe1: max_mtu still 4096" "max_mtu:[[:space:]]+4096 \(5\)" "$info"
    check_match "rxe0: active_mtu 4096 (rail A untouched)" "active_mtu:[[:space:]]+4096" "$(ibv_devinfo -d rxe0)"

    section "second interface in rail A's subnet"
    check "veth pair extra0/extra1" ip link add extra0 mtu 9000 type veth peer name extra1 mtu 9000
    check "extra0 address 10.10.1.101/24" ip addr add 10.10.1.101/24 dev extra0
    ip link set extra0 up
    ip link set extra1 up
    routes=$(ip -4 route show 10.10.1.0/24)
    echo "$routes" | sed 's/^/    route: /'
    check_eq "two routes to rail A's subnet" 2 "$(grep -c . <<<"$routes")"
    record "10.10.1.0/24 routes: $(tr '\n' ';' <<<"$routes") route to the peer: $(ip -4 route get 10.10.1.2 | head -1)"

    section "rxe device without an IPv4 GID"
    add_rxe rxe2 extra1
    table=$(gid_table rxe2)
    echo "$table" | sed 's/^/    rxe2 GID /'
    check_match "rxe2 has a link-local GID" "^0 fe80:" "$table"
    if grep -q ':ffff:' <<<"$table"; then
        fail "rxe2 has an IPv4 GID: $table"
    else
        pass "rxe2 has no IPv4-mapped GID"
    fi
    record "rxe2 GIDs: $(tr '\n' ';' <<<"$table")"
    check_eq "rxe0 keeps its IPv4 GID at index 1" "$(ipv4_gid "$(rail_ip railA)")" "$(cat "$(port_dir rxe0)/gids/1")"
fi
sync_point misconfigured 120

section "RDMA across the MTU mismatch on rail B"
# Not judged: the path MTU is what the two ends agree on; recorded for the reader.
if PERF_TIMEOUT=60 perftest_run ib_write_bw railB bw-mismatch -n 50; then
    out=$RES/bw-mismatch.node$NODE.txt
    record "ib_write_bw rail B with MTU 1500|9000: $(grep -m1 'Mtu' "$out" | tr -s ' \t' ' ') -> $(perftest_result_line "$out" | tr -s ' \t' ' ')"
else
    record "ib_write_bw rail B with MTU 1500|9000: no figures"
fi
sync_point perftest-done 120

section "rocewatchd"
# rxe2 is listed as a rail on node 1: a device meant to carry RoCE v2 traffic
((NODE == 1)) && DAEMON_RAILS="rxe0 rxe1 rxe2"
if start_daemon; then
    if ((NODE == 1)); then
        if expect_alert mtu_low railB 10 warning; then
            check_eq "rocewatchd: mtu_low railB actual_mtu = sysfs" "$(cat /sys/class/net/railB/mtu)" "$(jq -r .details.actual_mtu <<<"$ALERT")"
        fi
        if expect_alert roce_mtu_low rxe1/1 10 warning; then
            info=$(ibv_devinfo -d rxe1)
            check_eq "rocewatchd: roce_mtu_low rxe1/1 active_mtu/max_mtu = ibv_devinfo" \
                "$(awk '$1 == "active_mtu:" { a = $2 } $1 == "max_mtu:" { m = $2 } END { print a "/" m }' <<<"$info")" \
                "$(jq -r '"\(.details.active_mtu)/\(.details.max_mtu)"' <<<"$ALERT")"
        fi
        # the rail whose subnet another interface shares is the object; extra0 the conflict
        if expect_alert subnet_overlap railA 10 warning; then
            check_eq "rocewatchd: subnet_overlap railA conflicts (ip: $(ip -4 -o addr show dev extra0 | awk '{ print $4 }'))" \
                "extra0 $(ip -4 -o addr show dev extra0 | awk '{ print $4 }')" "$(jq -r .details.conflicts <<<"$ALERT")"
        fi
        expect_alert no_roce_v2_gid rxe2/1 10 critical
        # rxe2 sits on a veth: its port rate is the veth's speed, not the rails' 100 Gb/s
        rate=$(cat "$(port_dir rxe2)/rate")
        if (($(awk '{ print int($1) }' <<<"$rate") < 100)); then
            expect_alert port_rate_low rxe2/1 10 warning
            check_eq "rocewatchd: port_rate_low rxe2/1 rate = sysfs" "$rate" "$(jq -r .details.rate <<<"$ALERT")"
            rate_alert=("port_rate_low rxe2/1")
        else
            rate_alert=()
        fi
        for other in "mtu_low railA" "roce_mtu_low rxe0/1" "subnet_overlap railB" "mtu_low extra1"; do
            # shellcheck disable=SC2086
            expect_no_alert $other
        done
        expect_alert_set "mtu_low railB" "roce_mtu_low rxe1/1" "subnet_overlap railA" "no_roce_v2_gid rxe2/1" "${rate_alert[@]}"
        # no_roce_v2_gid is critical by the rules' table
        expect_health critical
        expect_port_matches_kernel rxe1 ACTIVE
        expect_port_matches_kernel rxe2 ACTIVE
        expect_link_matches_kernel railB
        expect_link_matches_kernel extra1
        check_eq "rocewatchd: rxe2/1 roce_v2_gid (kernel: no IPv4 GID)" null \
            "$(query_daemon /api/v1/devices/rxe2 | jq -c '.ports[0].roce_v2_gid')"
    else
        expect_no_alerts
        expect_health healthy
        for rail in "${RAILS[@]}"; do
            expect_port_matches_kernel "${RAIL_RXE[$rail]}" ACTIVE
        done
    fi
    save_daemon_state misconfig
fi
sync_point finished 120
finish
