#!/bin/bash
# Bonded rails: both rails enslaved to a balance-xor bond (layer3+4), the documented
# choice for direct-connected nodes. The kernel moves the GID entries of the slaves' rxe
# devices to bond0 (RDMA on those devices then breaks: a bond over the RoCE netdevs);
# one slave loses its link (QMP, both cable ends) and comes back. The daemon must report
# the bond as /proc/net/bonding and sysfs do, raise gid_on_bond on both slaves' rxe ports
# with the GID indices the kernel moved, raise bond_slave_down/bond_degraded while a
# slave is down, and clear them after it returns.
# vm-nodes: 2
# vm-timeout: 540
. "$(dirname "$0")/lib.sh"

BOND_IP=10.10.3.$NODE
PEER_BOND_IP=10.10.3.$PEER

# Kernel view of a bond as key=value: /proc/net/bonding/NAME and sysfs.
kernel_bond_view() {
    local b=$1 sl
    awk '
        /^Bonding Mode:/ { sub(/^Bonding Mode: /, ""); print "mode_text=" $0 }
        /^Transmit Hash Policy:/ { print "xmit_hash_policy=" $4 }
        /^MII Polling Interval \(ms\):/ { print "miimon_ms=" $5 }
        /^Slave Interface:/ { s = $3; n++; slaves = slaves (slaves == "" ? "" : " ") s }
        s != "" && /^MII Status:/ { print "slave_" s "_mii_status=" $3; if ($3 == "up") up++ }
        s != "" && /^Link Failure Count:/ { print "slave_" s "_link_failure_count=" $4 }
        s != "" && /^Permanent HW addr:/ { print "slave_" s "_perm_hwaddr=" $4 }
        END { print "slaves=" slaves; print "slaves_total=" n + 0; print "slaves_up=" up + 0 }
    ' "/proc/net/bonding/$b"
    echo "mode=$(cut -d' ' -f1 "/sys/class/net/$b/bonding/mode")"
    echo "active_slave=$(cat "/sys/class/net/$b/bonding/active_slave")"
    echo "operstate=$(cat "/sys/class/net/$b/operstate")"
    echo "mtu=$(cat "/sys/class/net/$b/mtu")"
    for sl in $(cat "/sys/class/net/$b/bonding/slaves"); do
        echo "slave_${sl}_state=$(cat "/sys/class/net/$sl/bonding_slave/state")"
        echo "slave_${sl}_operstate=$(cat "/sys/class/net/$sl/operstate")"
    done
}

# The daemon's view of bond NAME from /api/v1/bonds, keyed like kernel_bond_view.
daemon_bond_view() {
    query_daemon /api/v1/bonds | jq -r --arg b "$1" '
        def proc_mode: {"balance-rr": "load balancing (round-robin)", "active-backup": "fault-tolerance (active-backup)",
            "balance-xor": "load balancing (xor)", "broadcast": "fault-tolerance (broadcast)",
            "802.3ad": "IEEE 802.3ad Dynamic link aggregation", "balance-tlb": "transmit load balancing",
            "balance-alb": "adaptive load balancing"}[.] // .;
        first(.bonds[] | select(.name == $b)) as $x
        | "mode=\($x.mode)", "mode_text=\($x.mode | proc_mode)", "xmit_hash_policy=\($x.xmit_hash_policy)",
          "miimon_ms=\(if $x.miimon_seconds == null then null else $x.miimon_seconds * 1000 | round end)", "active_slave=\($x.active_slave // "")", "operstate=\($x.operstate)",
          "mtu=\($x.mtu)", "slaves=\([$x.slaves[].name] | join(" "))", "slaves_total=\($x.slaves_total)",
          "slaves_up=\($x.slaves_up)",
          ($x.slaves[] | "slave_\(.name)_mii_status=\(.mii_status)", "slave_\(.name)_link_failure_count=\(.link_failure_count)",
            "slave_\(.name)_perm_hwaddr=\(.perm_hwaddr)", "slave_\(.name)_state=\(.state)",
            "slave_\(.name)_operstate=\(.operstate)")'
}

# expect_bond_matches_kernel NAME TAG: the daemon's bond equals /proc/net/bonding and sysfs.
expect_bond_matches_kernel() {
    expect_view_matches bond "$1" "bond $1 ($2)" "bond-$1-$2"
}

# GID indices of DEV bound to NETDEV in the kernel, as the daemon's details list them.
kernel_gid_indices_on() { gid_table "$1" | awk -v n="$2" '$4 == n { s = s (s == "" ? "" : ", ") $1 } END { print (s == "" ? "none" : s) }'; }

section "rxe devices on the bare rails"
for rail in "${RAILS[@]}"; do
    add_rxe "${RAIL_RXE[$rail]}" "$rail"
    check_eq "${RAIL_RXE[$rail]}: GID 1 netdev before bonding" "$rail" \
        "$(cat "$(port_dir "${RAIL_RXE[$rail]}")/gid_attrs/ndevs/1")"
done
sync_point rxe-up

section "bond0: balance-xor, layer3+4"
check "create bond0" ip link add bond0 type bond mode balance-xor xmit_hash_policy layer3+4 miimon 100
for rail in "${RAILS[@]}"; do
    ip addr flush dev "$rail"
    ip link set "$rail" down
    check "enslave $rail" ip link set "$rail" master bond0
done
ip link set bond0 mtu 9000
check "bond0 up" ip link set bond0 up
check "bond0 address" ip addr add "$BOND_IP/24" dev bond0
for rail in "${RAILS[@]}"; do ip link set "$rail" up; done

# The bond reports its slaves up after a miimon round or two.
bond_slave_mii() { awk -v s="$1" '/^Slave Interface:/ { cur = $3 } cur == s && /^MII Status:/ { print $3; exit }' /proc/net/bonding/bond0; }
bond_slave_failures() { awk -v s="$1" '/^Slave Interface:/ { cur = $3 } cur == s && /^Link Failure Count:/ { print $4; exit }' /proc/net/bonding/bond0; }
wait_slave_mii() {
    local slave=$1 want=$2 t=0
    until [[ $(bond_slave_mii "$slave") == "$want" ]]; do
        ((t++ < 100)) || return 1
        snooze 0.05
    done
}
for rail in "${RAILS[@]}"; do
    wait_slave_mii "$rail" up || fail "$rail MII not up in bond0 within 5s"
done
cp /proc/net/bonding/bond0 "$RES/proc-net-bonding-bond0.txt"
bond=$(cat /proc/net/bonding/bond0)
check_match "/proc/net/bonding/bond0: mode" "Bonding Mode: load balancing \(xor\)" "$bond"
check_match "/proc/net/bonding/bond0: hash policy" "Transmit Hash Policy: layer3\+4 \(1\)" "$bond"
check_match "/proc/net/bonding/bond0: MII up" "MII Status: up" "$(head -12 <<<"$bond")"
check_match "/proc/net/bonding/bond0: miimon" "MII Polling Interval \(ms\): 100" "$bond"
for rail in "${RAILS[@]}"; do
    check_eq "/proc/net/bonding/bond0: $rail MII" up "$(bond_slave_mii "$rail")"
    check_eq "$rail master" bond0 "$(basename "$(readlink /sys/class/net/$rail/master)")"
done
check_eq "sysfs bonding/mode" "balance-xor 2" "$(cat /sys/class/net/bond0/bonding/mode)"
check_eq "sysfs bonding/xmit_hash_policy" "layer3+4 1" "$(cat /sys/class/net/bond0/bonding/xmit_hash_policy)"
check_eq "sysfs bonding/slaves" "railA railB" "$(cat /sys/class/net/bond0/bonding/slaves)"
ip -d link show bond0 >"$RES/ip-link-bond0.txt"
sync_point bond-up
check "ping the peer over bond0" bb ping -c 3 -W 5 "$PEER_BOND_IP"

section "GID entries moved to bond0"
# roce_gid_mgmt fills the slaves' GID tables from the bond master: give it a moment.
sleep 1
for rail in "${RAILS[@]}"; do
    dev=${RAIL_RXE[$rail]}
    table=$(gid_table "$dev")
    echo "$table" | sed "s/^/    $dev GID /"
    echo "$table" >"$RES/gids-$dev-bonded.txt"
    check_match "$dev: a GID entry is bound to bond0" " bond0$" "$table"
    idx=$(gid_index_of "$dev" "$(ipv4_gid "$BOND_IP")")
    if [[ -n $idx ]]; then
        pass "$dev: bond0's address $BOND_IP is GID $idx"
        check_eq "$dev: GID $idx netdev" bond0 "$(cat "$(port_dir "$dev")/gid_attrs/ndevs/$idx")"
        record "$dev (slave $rail) GID $idx = ::ffff:$BOND_IP on bond0"
    else
        fail "$dev: no GID for bond0's address $BOND_IP"
    fi
    if grep -q " $rail\$" <<<"$table"; then
        fail "$dev: GID entries still bound to $rail"
    else
        pass "$dev: no GID entry bound to $rail any more"
    fi
done
sync_point gids-checked

section "RDMA over a slave's rxe device with the bond's GID"
# The connection sets up (perftest's exchange is TCP, which the bond carries), then the
# RDMA packets are lost: received on railA, they reach the stack as bond0's, and bond0
# has no rxe device. perftest's non-rdma_cm mode has no retry-count option and rxe
# retries forever with its 7, so the figures, not the exit status, tell: a healthy run
# of 20 iterations takes well under a second.
PERF_TIMEOUT=15 PERF_SERVER_IP=10.10.3.1 perftest_run ib_write_lat railA lat-bonded -x "$(gid_index_of rxe0 "$(ipv4_gid "$BOND_IP")")" -n 20
out=$RES/lat-bonded.node$NODE.txt
line=$(perftest_result_line "$out")
why=$(grep -m1 -iE 'error|fail|unable|couldn' "$out")
if [[ -z $line ]]; then
    pass "RDMA through rxe0 with bond0's GID fails, as on real hardware (${why:-no figures})"
    record "ib_write_lat over rxe0 with the bond's GID: no figures (${why:-timed out})"
else
    fail "RDMA through a bond slave's rxe device worked (this kernel no longer shows the failure): $line"
fi
sync_point rdma-tried 90

section "rocewatchd on the bonded node"
daemon_up=0
if start_daemon; then
    daemon_up=1
    for rail in "${RAILS[@]}"; do
        dev=${RAIL_RXE[$rail]}
        # the kernel still binds the port to the slave (rdma link: netdev railA) while its
        # GID entries name bond0: the daemon must show both as they are
        expect_port_matches_kernel "$dev" ACTIVE
        check_eq "rocewatchd: $dev/1 GID table read through verbs" verbs \
            "$(query_daemon "/api/v1/devices/$dev" | jq -r '.ports[0].gids_source')"
        if expect_alert gid_on_bond "$dev/1" 10 critical; then
            check_eq "rocewatchd: gid_on_bond $dev/1 bond" bond0 "$(jq -r .details.bond <<<"$ALERT")"
            check_eq "rocewatchd: gid_on_bond $dev/1 netdev" "$rail" "$(jq -r .details.netdev <<<"$ALERT")"
            check_eq "rocewatchd: gid_on_bond $dev/1 GID indices on bond0 = the kernel's" \
                "$(kernel_gid_indices_on "$dev" bond0)" "$(jq -r .details.gid_indices_on_bond <<<"$ALERT")"
        fi
        expect_interface "$rail" master bond0
        # the port still names the slave; no GID entry names it any more
        expect_interface "$rail" '.rdma | map("\(.device)/\(.port) \(.state_name)")' "[\"$dev/1 ACTIVE\"]"
        expect_interface "$rail" gid_refs "[]"
    done
    check_eq "rocewatchd: GID entries naming bond0 = the kernel's" \
        "$(for dev in rxe0 rxe1; do gid_table "$dev" | awk -v d="$dev" '$4 == "bond0" { print d "/" $1 }'; done | sort | tr '\n' ' ')" \
        "$(query_daemon /api/v1/interfaces | jq -r 'first(.interfaces[] | select(.name == "bond0")) | .gid_refs[] | "\(.device)/\(.index)"' | sort | tr '\n' ' ')"
    expect_interface bond0 is_bond true
    # balance-xor is the documented choice: only balance-rr reorders
    expect_no_alert bond_mode_reorders bond0
    expect_alert_set "gid_on_bond rxe0/1" "gid_on_bond rxe1/1"
    expect_health critical
    expect_bond_matches_kernel bond0 up
    expect_metric "rocewatch_bond_info{bond=\"bond0\",mode=\"balance-xor\",xmit_hash_policy=\"layer3+4\"} 1" \
        "rocewatch_bond_slaves{bond=\"bond0\"} 2" "rocewatch_bond_slaves_up{bond=\"bond0\"} 2" \
        "rocewatch_bond_miimon_seconds{bond=\"bond0\"} 0.1"
    save_daemon_state bonded
fi

section "slave railB loses its link"
sync_point pull-railB
((NODE == 1)) && host_request set_link railB off
if wait_slave_mii railB down; then
    pass "railB MII down in bond0"
else
    fail "railB MII still $(bond_slave_mii railB) after the link went off"
fi
check_eq "railB link failure count" 1 "$(bond_slave_failures railB)"
check_eq "railA MII stays up" up "$(bond_slave_mii railA)"
check_eq "bond0 operstate (one slave left)" up "$(cat /sys/class/net/bond0/operstate)"
cp /proc/net/bonding/bond0 "$RES/proc-net-bonding-bond0-degraded.txt"
check "ping the peer over the degraded bond" bb ping -c 3 -W 5 "$PEER_BOND_IP"
if ((daemon_up)); then
    # railA still up: losing redundancy is a warning (critical only with no slave left)
    expect_alert bond_slave_down railB 10 warning
    expect_alert bond_degraded bond0 10 warning
    check_eq "rocewatchd: bond_degraded names the down slave" "railB" "$(jq -r .details.down <<<"$ALERT")"
    expect_bond_matches_kernel bond0 degraded
    # the rest of what a lost link means: rxe1's port and railB are down too
    check_eq "kernel: rxe1 port state with railB's link off" DOWN "$(port_state rxe1)"
    expect_alert port_down rxe1/1 10 critical
    expect_alert netdev_down railB 10 critical
    expect_no_alert bond_slave_down railA
    expect_metric "rocewatch_bond_slaves_up{bond=\"bond0\"} 1" \
        "rocewatch_bond_slave_mii_up{bond=\"bond0\",netdev=\"railB\"} 0" \
        "rocewatch_bond_slave_link_failures_total{bond=\"bond0\",netdev=\"railB\"} $(bond_slave_failures railB)"
    save_daemon_state degraded
fi
sync_point restore-railB
((NODE == 1)) && host_request set_link railB on
if wait_slave_mii railB up; then
    pass "railB MII up again in bond0"
else
    fail "railB MII still $(bond_slave_mii railB) after the link came back"
fi
if ((daemon_up)); then
    expect_cleared bond_slave_down railB 15
    expect_cleared bond_degraded bond0 15
    expect_cleared port_down rxe1/1 15
    expect_cleared netdev_down railB 15
    expect_bond_matches_kernel bond0 restored
    # what stays: the GIDs are still on the bond; railB's link failure and rxe1's
    # link_downed stay within the counter window (5 minutes)
    expect_alert bond_link_failures railB 5 warning
    check_eq "rocewatchd: railB link failures in the window = the kernel's count" \
        "$(bond_slave_failures railB)" "$(jq -r .details.link_failures_in_window <<<"$ALERT")"
    expect_alert_set "gid_on_bond rxe0/1" "gid_on_bond rxe1/1" "bond_link_failures railB" "error_counters rxe1/1:link_downed"
    save_daemon_state restored
fi
sync_point finished
finish
