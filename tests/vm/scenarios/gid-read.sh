#!/bin/bash
# Benchmark (not in the meson suite): a GID table read from sysfs, as rocewatch reads it,
# against ibv_query_gid_table, on real rxe devices: the two rails, then 14 more on dummy
# netdevs (one IPv4 address each, then three). build/bench/gid_table_read prints both reads'
# medians; it fails when the two find a different number of entries. QEMU runs on TCG here, so
# the times are many times a real host's; read them side by side, as ratios.
# vm-nodes: 1
# vm-timeout: 400
. "$(dirname "$0")/lib.sh"

BENCH=$RW_REPO/build/bench/gid_table_read
if [[ ! -x $BENCH ]]; then
    if [[ ${RW_CI:-} == true ]]; then fail "no $BENCH (ninja -C build bench/gid_table_read)"; else skip "no $BENCH: nothing to run"; fi
    finish
fi

measure() {
    local out
    if out=$("$BENCH" 5 2>&1); then
        pass "both reads found the same entries"
    else
        fail "the two reads differ: $out"
    fi
    record "$out"
}

rxe_on_every_rail
measure
for i in $(seq 0 13); do
    ip link add "dm$i" type dummy && ip link set "dm$i" up && ip addr add "10.50.$i.1/24" dev "dm$i" ||
        fail "dummy netdev dm$i"
    rdma link add "rxd$i" type rxe netdev "dm$i" || fail "rxe on dm$i"
done
snooze 2
measure
for i in $(seq 0 13); do
    ip addr add "10.51.$i.1/24" dev "dm$i" && ip addr add "10.52.$i.1/24" dev "dm$i" || fail "addresses on dm$i"
done
snooze 2
measure
finish
