#!/bin/bash
# Three guests on two rails, each rail a switch (the harness's learning switch per rail, as a
# leaf joins a rail's NICs): RDMA among three nodes from one inventory, and a fault localized.
#   - every daemon reads the same inventory (file_sd JSON, the three control addresses), finds
#     itself in it, says hello to the two others and matches both rails from their hellos
#     (rxe0 on railA's subnet, rxe1 on railB's);
#   - the ring (ring_successors = 2: everyone probes everyone) runs rdma_write_lat and tcp_lat
#     over both rails on schedule: twelve paths, every one succeeds over real Soft-RoCE;
#   - node 3's railB cable is pulled (its switch port only): nodes 1 and 2 each raise
#     rail_unreachable naming node 3 and rxe1 (RDMA and TCP fail there, railA to node 3 and
#     every path between nodes 1 and 2 still pass), node 3 names its own port, and no one
#     blames the path between nodes 1 and 2; with the cable back, all of it clears.
# vm-nodes: 3
# vm-timeout: 600
DAEMON_LISTEN=0.0.0.0:9879
DAEMON_FAST_CLEAR_EXTRA="rail_unreachable peer_unreachable rdma_fails_tcp_works tcp_fails_rdma_works probe_failed"
. "$(dirname "$0")/lib.sh"

target() { echo "$(rail_ip railA "$1"):9879"; }
# no_alert_matching REGEX: no active alert's "rule object state severity" line matches.
no_alert_matching() { ! active_alerts | grep -qE -- "$1"; }
OTHERS=()
for ((n = 1; n <= NODES; n++)); do ((n == NODE)) || OTHERS+=("$n"); done
declare -A RXE_OF=([railA]=rxe0 [railB]=rxe1)

section "rxe devices"
rxe_on_every_rail
sync_point rxe-up 240

section "daemons from one inventory"
mkdir -p "$DAEMON_DIR"
(umask 077 && echo "$TOKEN" >"$DAEMON_DIR/token")
printf '[{"targets": ["%s", "%s", "%s"], "labels": {"rack": "vm"}}]\n' "$(target 1)" "$(target 2)" "$(target 3)" \
    >"$DAEMON_DIR/inventory.json"
cp "$DAEMON_DIR/inventory.json" "$RES/inventory.json"
DAEMON_EXTRA_CONFIG="[probes]
token_file = \"$DAEMON_DIR/token\"
enabled = [\"tcp_lat\", \"rdma_write_lat\"]
latency_threshold = \"10s\"

[probes.tcp_lat]
interval = \"6s\"
jitter = \"2s\"
count = 10
timeout = \"10s\"

[probes.rdma_lat]
interval = \"10s\"
jitter = \"3s\"
count = 20
timeout = \"20s\"

[cluster]
inventory = \"$DAEMON_DIR/inventory.json\"
ring_successors = 2
rotating_peers = 0"
start_daemon || { finish; exit; }
sync_point daemons-up 240

# peer_rails N: "rail=remote_interface" pairs /api/v1/peers matched for node N, sorted.
peer_rails() {
    query_daemon /api/v1/peers | jq -r --arg p "$(target "$1")" \
        'first(.peers[] | select(.name == $p)) | [.rails[] | "\(.name)=\(.remote_interface)"] | sort | join(" ")'
}
for n in "${OTHERS[@]}"; do
    t=0
    until [[ $(peer_rails "$n") == "rxe0=railA rxe1=railB" ]] || ((t++ > 600)); do snooze 0.2; done
    check_eq "node$n: both rails matched from its hello" "rxe0=railA rxe1=railB" "$(peer_rails "$n")"
done
check_eq "probes exactly the two others (the ring)" "$(target "${OTHERS[0]}") $(target "${OTHERS[1]}")" \
    "$(query_daemon /api/v1/peers | jq -r '[.peers[].name] | sort | join(" ")')"

section "the ring: RDMA and TCP to both others over both rails"
# path_ok N RAIL KIND: the latest scheduled result of KIND to node N over RAIL succeeded.
path_ok() { [[ $(probe_latest "$(target "$1")" "${RXE_OF[$2]}" "$3" | jq -r .success) == true ]]; }
# path_passes N RAIL KIND: path_ok now or at a run within 40 s. A node serves one RDMA session
# at a time, so a run that found the peer serving a third node's session (peer_busy) is no
# verdict; the next run is.
path_passes() {
    local limit=$((${EPOCHREALTIME/./} + 40000000))
    until path_ok "$@"; do
        ((${EPOCHREALTIME/./} < limit)) || {
            log "latest $3 to node$1 over $2: $(probe_latest "$(target "$1")" "${RXE_OF[$2]}" "$3" | jq -c '{success, reason, detail}')"
            return 1
        }
        snooze 0.5
    done
}
for n in "${OTHERS[@]}"; do
    for rail in "${RAILS[@]}"; do
        for kind in rdma_write_lat tcp_lat; do
            # The result judged is the one that passed: read again, a newer run could be a
            # peer_busy answer (the peer serving a third node), which says nothing of the path.
            t=0
            until PROBE=$(probe_latest "$(target "$n")" "${RXE_OF[$rail]}" "$kind") &&
                [[ $(jf .success) == true ]] || ((t++ > 900)); do snooze 0.2; done
            check_eq "node$NODE -> node$n $rail $kind: success" true "$(jf .success)"
            [[ $kind == rdma_write_lat ]] &&
                record "node$NODE -> node$n $rail rdma_write_lat: typical $(jf '.latency_seconds.typical * 1e6') us"
        done
    done
done
expect_no_alerts
sync_point ring-green 300

section "node 3's railB cable pulled"
if ((NODE == 3)); then
    host_request set_link railB off 3
    mark cable-out
    if wait_port_state rxe1 DOWN 15 >/dev/null; then pass "rxe1 DOWN on node 3"; else fail "rxe1 not DOWN on node 3"; fi
    expect_alert port_down rxe1/1 30
else
    wait_mark cable-out 120
    obj="$(target 3)/rxe1"
    expect_alert rail_unreachable "$obj" 150
    record "node$NODE: rail_unreachable $obj: $(jq -r .summary <<<"$ALERT")"
    check "railA to node 3 still passes" path_passes 3 railA rdma_write_lat
    other=$((NODE == 1 ? 2 : 1))
    for rail in "${RAILS[@]}"; do
        check "node$other over $rail still passes (rdma_write_lat)" path_passes "$other" "$rail" rdma_write_lat
    done
    check "no alert names node$other or node 3's railA" no_alert_matching "$(target "$other")|$(target 3)/rxe0"
    check "node 3 is not called unreachable as a whole" no_alert_matching "^peer_unreachable"
fi
sync_point fault-seen 240

section "cable back"
if ((NODE == 3)); then
    host_request set_link railB on 3
    mark cable-in
    expect_cleared port_down rxe1/1 60
else
    wait_mark cable-in 120
    expect_cleared rail_unreachable "$(target 3)/rxe1" 120
    t=0
    until path_ok 3 railB rdma_write_lat || ((t++ > 900)); do snooze 0.2; done
    check "rdma_write_lat to node 3 over railB passes again" path_ok 3 railB rdma_write_lat
fi
sync_point done 300
save_daemon_state final
stop_daemon
finish
