#!/bin/bash
# Cable pull on rail A: the host turns the link off at both ends (QMP set_link, what a
# pulled cable or a dead switch port looks like to both NICs). Both guests must see
# rxe0's port go DOWN within a second while rail B stays ACTIVE, then ACTIVE again
# after the link returns. Both daemons must raise port_down on rxe0/1 and netdev_down on
# railA within a second of the QMP request (judged by the alerts' own first_seen against
# the host's clock at the request, brought into each guest's clock), show the port and
# link as the kernel does, count the link_downed the kernel counted, and clear both
# alerts after the link returns.
# vm-nodes: 2
# vm-timeout: 360
. "$(dirname "$0")/lib.sh"

LIMIT_MS=1000   # port DOWN / ACTIVE within this long of the link change

section "rxe devices"
rxe_on_every_rail
for rail in "${RAILS[@]}"; do
    check_eq "${RAIL_RXE[$rail]} ACTIVE before the pull" ACTIVE "$(port_state "${RAIL_RXE[$rail]}")"
done
link_downed_before=$(hw_counter rxe0 link_downed)
daemon_up=0
if start_daemon; then
    daemon_up=1
    expect_no_alerts
    expect_health healthy
    # the host's clock in this guest's terms, to time the alerts from the QMP request
    measure_host_clock || daemon_up=0
fi
sync_point ready

# link_change ON|OFF WANT_STATE TAG: node 1 asks the host to switch rail A at both ends;
# each guest times, without forking, how long its rxe0 port takes to reach WANT_STATE
# from the moment the change was asked for (node 2 learns that moment from a mark).
# Sets CHANGE_START (us) and CHANGE_MS, QMP_US: when the host sent the first QMP
# set_link (host clock; node 1 passes it on to node 2 in the mark TAG.qmp), and
# LINK_SEEN_US: when this guest saw the port change (its clock).
link_change() {
    local onoff=$1 want=$2 tag=$3 s c f carrier_ms=- req=
    f=$(port_dir rxe0)/state
    QMP_US=
    if ((NODE == 1)); then
        mark "$tag"
        CHANGE_START=${EPOCHREALTIME/./}
        HOST_REPLY_FILE=$RES/qmp-$tag.txt host_request set_link railA "$onoff" &
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
            # the carrier may have changed between its read and this one
            [[ $carrier_ms == - ]] && carrier_ms="<=$CHANGE_MS"
            break
        fi
        snooze 0.01
    done
    local seen_us=${EPOCHREALTIME/./}
    LINK_SEEN_US=
    [[ $CHANGE_MS != timeout ]] && LINK_SEEN_US=$seen_us
    if [[ -n $req ]]; then
        wait "$req"
        cp "$RES/qmp-$tag.txt" "$SHARE/marks/$tag.qmp.tmp" && mv "$SHARE/marks/$tag.qmp.tmp" "$SHARE/marks/$tag.qmp"
    fi
    if wait_mark "$tag.qmp" 30; then
        read -r _ QMP_US _ <"$SHARE/marks/$tag.qmp"
        [[ ${HOST_OFFSET_US:-} && $CHANGE_MS != timeout ]] &&
            record "link $onoff: rxe0 $want seen $(((seen_us - $(host_to_guest_us "$QMP_US")) / 1000)) ms after the QMP request (+-${CLOCK_ERR_MS} ms)"
    fi
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
d=$(port_dir rxe0)
check_eq "rxe0 sysfs state" "1: DOWN" "$(cat "$d/state")"
record "rxe0 phys_state while pulled: $(cat "$d/phys_state")"
check_match "rxe0: rdma link shows DOWN" "state DOWN" "$(rdma link show rxe0/1)"
check_match "rxe0: ibv_devinfo PORT_DOWN" "state:[[:space:]]+PORT_DOWN \(1\)" "$(ibv_devinfo -d rxe0)"
check_eq "railA carrier" 0 "$(cat /sys/class/net/railA/carrier)"
check_match "railA operstate" "^(down|lowerlayerdown)$" "$(cat /sys/class/net/railA/operstate)"
check_eq "rxe1 (rail B) unaffected" ACTIVE "$(port_state rxe1)"
check "rail B still carries traffic" bb ping -c 2 -W 5 "$(rail_ip railB "$PEER")"
if ((daemon_up)) && [[ -n $QMP_US ]]; then
    section "rocewatchd while rail A is pulled"
    # The QMP request in this guest's clock. The port cannot have changed before it, so
    # when the offset's error puts it after the change this guest saw, the change wins.
    pull_event=$(host_to_guest_us "$QMP_US")
    if [[ -n $LINK_SEEN_US ]] && ((LINK_SEEN_US < pull_event)); then
        log "the QMP time lands $(((pull_event - LINK_SEEN_US) / 1000)) ms after the port change seen here (clock error): timing from the change"
        pull_event=$LINK_SEEN_US
    fi
    for a in "port_down rxe0/1" "netdev_down railA"; do
        # shellcheck disable=SC2086
        expect_alert $a 10 critical && expect_alert_within $a 1000 "$pull_event"
    done
    # the kernel counted the link going down; the daemon's window saw that rise
    if expect_alert error_counters rxe0/1:link_downed 10 critical; then
        check_eq "rocewatchd: link_downed increase = the kernel's" \
            "$(($(hw_counter rxe0 link_downed) - link_downed_before))" "$(jq -r .details.increase <<<"$ALERT")"
    fi
    expect_alert_set "port_down rxe0/1" "netdev_down railA" "error_counters rxe0/1:link_downed"
    expect_health critical
    expect_port_matches_kernel rxe0 DOWN
    expect_link_matches_kernel railA
    expect_interface railA carrier false
    labels='device="rxe0",port="1"'
    expect_metric "rocewatch_rdma_port_up{$labels} 0" "rocewatch_rdma_port_state{$labels} 1" \
        "rocewatch_link_carrier{netdev=\"railA\"} 0" \
        "rocewatch_alert_active{rule=\"port_down\",object=\"rxe0/1\",severity=\"critical\",state=\"firing\",scope=\"node\"} 1"
    save_daemon_state pulled
fi
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
    section "rocewatchd after rail A is back"
    expect_cleared port_down rxe0/1 15
    expect_cleared netdev_down railA 15
    # one pull is not flapping (that takes flap_transitions = 6 carrier changes)
    expect_no_alert link_flapping railA
    # the link_downed rise stays in the counter window (5 minutes) after the link is back
    expect_alert_set "error_counters rxe0/1:link_downed"
    expect_port_matches_kernel rxe0 ACTIVE
    expect_link_matches_kernel railA
    save_daemon_state plugged
fi
sync_point finished 120
finish
