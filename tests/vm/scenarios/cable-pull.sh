#!/bin/bash
# Cable pull on rail A: the host turns the link off at both ends (QMP set_link, what a
# pulled cable or a dead switch port looks like to both NICs). Both guests must see
# rxe0's port go DOWN within a second while rail B stays ACTIVE, then ACTIVE again
# after the link returns; the daemon, where built, raises and clears its alerts.
# vm-nodes: 2
# vm-timeout: 360
. "$(dirname "$0")/lib.sh"

LIMIT_MS=1000   # port DOWN / ACTIVE within this long of the link change

section "rxe devices"
for rail in "${RAILS[@]}"; do
    add_rxe "${RAIL_RXE[$rail]}" "$rail"
done
for rail in "${RAILS[@]}"; do
    check_eq "${RAIL_RXE[$rail]} ACTIVE before the pull" ACTIVE "$(port_state "${RAIL_RXE[$rail]}")"
done
link_downed_before=$(hw_counter rxe0 link_downed)
daemon_up=0
if start_daemon; then
    daemon_up=1
    expect_no_alerts
fi
sync_point ready

# link_change ON|OFF WANT_STATE TAG: node 1 asks the host to switch rail A at both ends;
# each guest times, without forking, how long its rxe0 port takes to reach WANT_STATE
# from the moment the change was asked for (node 2 learns that moment from a mark).
# Sets CHANGE_START (us) and CHANGE_MS.
link_change() {
    local onoff=$1 want=$2 tag=$3 s c f carrier_ms=- req=
    f=$(port_dir rxe0)/state
    if ((NODE == 1)); then
        mark "$tag"
        CHANGE_START=${EPOCHREALTIME/./}
        host_request set_link railA "$onoff" &
        req=$!
    else
        wait_mark "$tag" 60 || return 1
        CHANGE_START=${EPOCHREALTIME/./}
    fi
    CHANGE_MS=timeout
    while ((${EPOCHREALTIME/./} - CHANGE_START < 10000000)); do
        if [[ $carrier_ms == - ]]; then
            read -r c </sys/class/net/railA/carrier 2>/dev/null || c=0
            [[ ($onoff == off && $c == 0) || ($onoff == on && $c == 1) ]] &&
                carrier_ms=$(((${EPOCHREALTIME/./} - CHANGE_START) / 1000))
        fi
        read -r _ s <"$f"
        if [[ $s == "$want" ]]; then
            CHANGE_MS=$(((${EPOCHREALTIME/./} - CHANGE_START) / 1000))
            break
        fi
        snooze 0.01
    done
    [[ -n $req ]] && wait "$req"
    log "$tag: railA carrier after ${carrier_ms} ms, rxe0 $want after ${CHANGE_MS} ms"
    if [[ $CHANGE_MS != timeout ]] && ((CHANGE_MS <= LIMIT_MS)); then
        pass "rxe0 port $want ${CHANGE_MS} ms after the link went $onoff"
        record "link $onoff: rxe0 $want after ${CHANGE_MS} ms (railA carrier after ${carrier_ms} ms)"
    else
        fail "rxe0 port not $want within ${LIMIT_MS} ms of the link going $onoff (${CHANGE_MS} ms; now $(port_state rxe0))"
    fi
}

section "pull rail A"
link_change off DOWN pull-railA
pull_start=$CHANGE_START
if ((daemon_up)); then
    expect_alert port_down rxe0 1 "$pull_start"
    expect_alert netdev_down railA 1 "$pull_start"
fi
d=$(port_dir rxe0)
check_eq "rxe0 sysfs state" "1: DOWN" "$(cat "$d/state")"
record "rxe0 phys_state while pulled: $(cat "$d/phys_state")"
check_match "rxe0: rdma link shows DOWN" "state DOWN" "$(rdma link show rxe0/1)"
check_match "rxe0: ibv_devinfo PORT_DOWN" "state:[[:space:]]+PORT_DOWN \(1\)" "$(ibv_devinfo -d rxe0)"
check_eq "railA carrier" 0 "$(cat /sys/class/net/railA/carrier)"
check_match "railA operstate" "^(down|lowerlayerdown)$" "$(cat /sys/class/net/railA/operstate)"
check_eq "rxe1 (rail B) unaffected" ACTIVE "$(port_state rxe1)"
check "rail B still carries traffic" bb ping -c 2 -W 5 "$(rail_ip railB "$PEER")"
((daemon_up)) && save_daemon_state pulled
sync_point pulled 120

section "plug rail A back"
link_change on ACTIVE plug-railA
check_eq "rxe0 sysfs state" "4: ACTIVE" "$(cat "$d/state")"
check_eq "rxe0 phys_state" "5: LinkUp" "$(cat "$d/phys_state")"
check_eq "railA carrier" 1 "$(cat /sys/class/net/railA/carrier)"
check_eq "rxe0 GID 1 back on railA" "$(ipv4_gid "$(rail_ip railA)")" "$(cat "$d/gids/1")"
check "rail A carries traffic again" bb ping -c 2 -W 5 "$(rail_ip railA "$PEER")"
record "rxe0 hw_counters/link_downed: $link_downed_before before, $(hw_counter rxe0 link_downed) after"
if ((daemon_up)); then
    expect_cleared port_down rxe0 45
    expect_cleared netdev_down railA 45
    # flapping needs 3 cycles: one pull must not count as one
    if alert_active link_flapping railA; then fail "rocewatchd: one pull raised link_flapping"; else pass "rocewatchd: no link_flapping after one pull"; fi
    save_daemon_state plugged
fi
sync_point finished 120
finish
