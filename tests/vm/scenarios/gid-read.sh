#!/bin/bash
# Benchmark (not in the meson suite): a GID table read from sysfs, as rocewatch reads it,
# against ibv_query_gid_table, on real rxe devices: the two rails, then 14 more on dummy
# netdevs (one IPv4 address each, then three). build/bench/gid_table_read prints both reads'
# medians; it fails when the two find a different number of entries. Then rocewatchd's own
# read of the 16 devices' tables, through verbs and from files. QEMU runs on TCG here, so
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

# The daemon's own GID read, the same 16 devices: rocewatchd --once reads every table at start.
# On /sys they come through verbs; on a bind mount of /sys (any other root is a tree verbs must
# not stand in for) from a file a slot. The sysfs stage's duration, five runs each, alternated.
daemon_gid_read() {
    local root=$1
    "$ROCEWATCHD" --once --config "$RES/rocewatch.toml" --sysfs-root "$root" 2>>"$OUT/rocewatchd-once.log" |
        jq -r '.collectors[] | select(.name == "sysfs") | .duration_seconds * 1000 | floor'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
if daemon_present; then
    mkdir -p /run/rw-sys && mount --bind /sys /run/rw-sys || fail "a bind mount of /sys"
    daemon_config >"$RES/rocewatch.toml"
    verbs_ms=() files_ms=()
    for _ in 1 2 3 4 5; do
        verbs_ms+=("$(daemon_gid_read /sys)")
        files_ms+=("$(daemon_gid_read /run/rw-sys)")
    done
    v=$(printf '%s\n' "${verbs_ms[@]}" | median)
    f=$(printf '%s\n' "${files_ms[@]}" | median)
    check "rocewatchd --once read the tables both ways" test -n "$v" -a -n "$f" -a "${v:-0}" -gt 0
    record "rocewatchd --once, 16 devices, sysfs stage ms: GIDs through verbs ${verbs_ms[*]} (median $v), a file a slot ${files_ms[*]} (median $f), ratio $(awk -v a="$f" -v b="$v" 'BEGIN { if (b > 0) printf "%.1f", a / b }')"
    umount /run/rw-sys
elif [[ ${RW_CI:-} == true ]]; then
    fail "no rocewatchd: the daemon's read was not measured"
else
    skip "no rocewatchd: the daemon's read not measured"
fi
finish
