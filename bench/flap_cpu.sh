#!/usr/bin/env bash
# What a flapping link costs rocewatchd in CPU: the daemon on a NIC tree (from
# bench/make_nic_tree.py) in a network namespace of its own, first QUIET seconds untouched,
# then a veth pair in that namespace taken down and up every PERIOD seconds for as long.
# Every link event wakes the engine, and the cycles after a wake read the GID tables
# (design.md, "Events, not only polling"). Prints CPU seconds (utime + stime from
# /proc/PID/stat) and collection cycles (rocewatch_snapshot_generation) for both phases.
# Needs root and iproute2; removes its namespace and state directory on exit.
#
#   bench/flap_cpu.sh /tmp/t8 /tmp/t128        # ROCEWATCHD, QUIET (20), PERIOD (0.4)
set -euo pipefail

ROCEWATCHD=${ROCEWATCHD:-build/daemon/rocewatchd}
QUIET=${QUIET:-20}
PERIOD=${PERIOD:-0.4}
NS=rwflap-$$
STATE=$(mktemp -d /tmp/rw-flap-XXXXXX)
PORT=19557
PID=

cleanup() {
    if [[ -n $PID ]]; then
        kill "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    ip netns del "$NS" 2>/dev/null || true
    rm -rf "$STATE"
}
trap cleanup EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
generation() {
    ip netns exec "$NS" curl -sf "http://127.0.0.1:$PORT/metrics" |
        awk '$1 == "rocewatch_snapshot_generation" {print $2}'
}
tick=$(getconf CLK_TCK)
half=$(echo "$PERIOD / 2" | bc -l)
flaps=$(echo "$QUIET / $PERIOD" | bc)

for tree in "$@"; do
    ip netns add "$NS"
    ip -n "$NS" link set lo up
    ip -n "$NS" link add fa type veth peer name fb
    ip -n "$NS" link set fa up
    ip -n "$NS" link set fb up
    ip netns exec "$NS" "$ROCEWATCHD" --listen "127.0.0.1:$PORT" --state-dir "$STATE" \
        --sysfs-root "$tree/sysfs" --procfs-root "$tree/procfs" --lldpd-socket '' --log-level warn \
        >"$STATE/log" 2>&1 &
    PID=$!
    for _ in $(seq 100); do
        if [[ -n $(generation) ]]; then break; fi
        sleep 0.2
    done
    sleep 5  # past the first cycle, which reads everything

    a=$(cpu_ticks); g=$(generation); s=$(date +%s.%N)
    sleep "$QUIET"
    b=$(cpu_ticks); h=$(generation); e=$(date +%s.%N)
    printf '%s quiet:            %6.2f CPU-s in %5.1f s (%4.1f%% of a core), %4d cycles\n' "$tree" \
        "$(echo "($b - $a) / $tick" | bc -l)" "$(echo "$e - $s" | bc)" \
        "$(echo "100 * ($b - $a) / $tick / ($e - $s)" | bc -l)" $((h - g))

    a=$(cpu_ticks); g=$(generation); s=$(date +%s.%N)
    for _ in $(seq "$flaps"); do
        ip -n "$NS" link set fb down; sleep "$half"
        ip -n "$NS" link set fb up; sleep "$half"
    done
    b=$(cpu_ticks); h=$(generation); e=$(date +%s.%N)
    printf '%s flapping every %ss: %6.2f CPU-s in %5.1f s (%4.1f%% of a core), %4d cycles\n' "$tree" "$PERIOD" \
        "$(echo "($b - $a) / $tick" | bc -l)" "$(echo "$e - $s" | bc)" \
        "$(echo "100 * ($b - $a) / $tick / ($e - $s)" | bc -l)" $((h - g))

    kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
    ip netns del "$NS"
    rm -rf "${STATE:?}"/*
done
