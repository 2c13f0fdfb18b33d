#!/usr/bin/env bash
# rocewatch's UCX put probes side by side with UCX's own ucx_perftest on one path in one
# run: put bandwidth vs `ucx_perftest -t ucp_put_bw` and put latency vs `-t ucp_put_lat`,
# over a veth pair between two network namespaces made for the run (removed on exit), with
# UCX_TLS=tcp and UCX_NET_DEVICES set to each side's veth end. Needs root, iproute2, jq and
# ucx_perftest (Debian: apt-get install ucx-utils).
#
#   BUILD=/tmp/build-ucx bench/ucx_probe_vs_ucx_perftest.sh
#
# Knobs: BUILD (meson build dir holding tools/ucx_probe_cli), RUNS (3),
# BW_ITERS (5000 puts of BW_SIZE = 65536 bytes), OUTSTANDING (16 puts in flight, ours
# --outstanding and ucx_perftest -O), LAT_ITERS (10000 ping-pongs of LAT_SIZE = 8 bytes),
# BW_WARMUP / LAT_WARMUP (ucx_perftest -w: 100 / 1000), PIN (1: with 2 CPUs or more, side A
# runs on the first CPU and side B on the last, for both tools (taskset); 0: unpinned).
#
# What each figure is:
#  - bandwidth: bytes put / time from the first put to the completed flush (ours), and
#    ucx_perftest's "overall" bandwidth of the Final line (bytes / time from the start of the
#    measured loop to the final flush and the receiver's ack; its MB/s are MiB/s). Both are
#    counted by the sender (the client).
#  - latency: half the round trip of a put ping-pong (each side puts into the other's buffer
#    and spins on the last byte), the median. ucx_perftest's 50%ile is the median of its
#    last 2048 round trips (its timing queue), so LAT_ITERS stays >= 2048 to fill it; ours
#    is the median over all iterations less the perftest-style tail drop.
#  - warm-up: ucx_perftest runs -w iterations before the measured loop; ours runs none, it
#    waits for the UCX lanes to be connected (a flush) before its first timed put.
# Both tools spin on the CPU on both sides. Unpinned, on a small busy host, the two spinners
# of a ping-pong can share a CPU and then each message waits for the other's time slice to
# end: ucx_perftest's median becomes one scheduler tick (4000 us at HZ=250) while ours, whose
# passive side sleeps on the worker's event fd after 2 ms without traffic, stays near the
# true figure. Pinning the sides to different CPUs (PIN=1) removes that; other load on the
# host still shows in the means and in the bandwidth: the header prints the load average.
set -euo pipefail

BUILD=${BUILD:-build}
CLI=${CLI:-$BUILD/tools/ucx_probe_cli}
RUNS=${RUNS:-3}
BW_ITERS=${BW_ITERS:-5000}
BW_SIZE=${BW_SIZE:-65536}
OUTSTANDING=${OUTSTANDING:-16}
LAT_ITERS=${LAT_ITERS:-10000}
LAT_SIZE=${LAT_SIZE:-8}
BW_WARMUP=${BW_WARMUP:-100}
LAT_WARMUP=${LAT_WARMUP:-1000}
PIN=${PIN:-1}

NS_A=rwucx-a-$$
NS_B=rwucx-b-$$
DEV_A=rwu0
DEV_B=rwu1
ADDR_A=10.205.0.1
ADDR_B=10.205.0.2
PORT_OURS=5311
PORT_PT_BASE=13400   # ucx_perftest -p: a fresh port per run (its server exits after one test)

die() { echo "ucx_probe_vs_ucx_perftest: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"
[ -x "$CLI" ] || die "no ucx_probe_cli at $CLI: build it with ninja -C \$BUILD tools/ucx_probe_cli, or set BUILD"
command -v ucx_perftest >/dev/null || die "ucx_perftest not installed (Debian: ucx-utils)"
command -v jq >/dev/null || die "jq not installed"
[ "$LAT_ITERS" -ge 2048 ] || echo "warning: LAT_ITERS < 2048 leaves ucx_perftest's median queue part empty" >&2

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    ip netns del "$NS_A" 2>/dev/null || true
    ip netns del "$NS_B" 2>/dev/null || true
    if [ -n "${LOGDIR:-}" ]; then rm -rf "$LOGDIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PIN_A=() PIN_B=()
if [ "$PIN" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
    cpus=$(taskset -pc $$ | sed 's/.*: *//')
    first=$(tr ',' '\n' <<<"$cpus" | head -1 | cut -d- -f1)
    last=$(tr ',' '\n' <<<"$cpus" | tail -1 | cut -d- -f2)
    [ "$first" != "$last" ] && PIN_A=(taskset -c "$first") PIN_B=(taskset -c "$last")
fi

# UCX looks at /sys/class/net for its devices: `ip netns exec` mounts the namespace's own
# /sys, so each side sees its veth end (and only that).
in_a() { ip netns exec "$NS_A" env UCX_TLS=tcp UCX_NET_DEVICES="$DEV_A" "${PIN_A[@]}" "$@"; }
in_b() { ip netns exec "$NS_B" env UCX_TLS=tcp UCX_NET_DEVICES="$DEV_B" "${PIN_B[@]}" "$@"; }

ip netns add "$NS_A"
ip netns add "$NS_B"
ip link add "$DEV_A" netns "$NS_A" type veth peer name "$DEV_B" netns "$NS_B"
ip -n "$NS_A" link set lo up
ip -n "$NS_B" link set lo up
ip -n "$NS_A" addr add "$ADDR_A/24" dev "$DEV_A"
ip -n "$NS_B" addr add "$ADDR_B/24" dev "$DEV_B"
ip -n "$NS_A" link set "$DEV_A" up
ip -n "$NS_B" link set "$DEV_B" up
# UCX refuses a device without carrier ("not available"), and linkwatch can take a second
# to raise it on a fresh veth.
carrier() { ip -n "$1" link show dev "$2" | head -1 | grep -q 'LOWER_UP' &&
            ! ip -n "$1" link show dev "$2" | head -1 | grep -q 'NO-CARRIER'; }
for _ in $(seq 50); do
    carrier "$NS_A" "$DEV_A" && carrier "$NS_B" "$DEV_B" && break
    sleep 0.1
done
carrier "$NS_A" "$DEV_A" && carrier "$NS_B" "$DEV_B" || die "no carrier on the veth pair after 5 s"

LOGDIR=$(mktemp -d)
# Started with `ip netns exec` itself, not through in_b (a function: & would fork a shell),
# so that $! is the server (ip execs env, env execs taskset, taskset execs the CLI) and the
# cleanup's kill reaches it.
ip netns exec "$NS_B" env UCX_TLS=tcp UCX_NET_DEVICES="$DEV_B" "${PIN_B[@]}" \
    "$CLI" server --port "$PORT_OURS" --listen "$ADDR_B" >"$LOGDIR/ours-server.log" 2>&1 &
PIDS+=($!)
wait_listen() {
    for _ in $(seq 50); do
        ip netns exec "$NS_B" ss -ltnH "sport = :$1" | grep -q LISTEN && return 0
        sleep 0.1
    done
    cat "$LOGDIR"/*.log >&2
    die "nothing listens on port $1 in $NS_B (server logs above)"
}
wait_listen "$PORT_OURS"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }'; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "n/a"; exit }
    if (NR % 2) printf "%.3f", v[(NR + 1) / 2]; else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# One ucx_perftest test: a server in B (exits after the test) on a fresh port, the client
# in A; leaves the client's Final line in PT_FINAL. Called directly, not in $(...), so that
# the port counter and the server's pid stay in this shell. Arguments: the test's, for both.
PT_N=0
PT_FINAL=
perftest() {
    PT_N=$((PT_N + 1))
    local port=$((PORT_PT_BASE + PT_N))
    local slog="$LOGDIR/pt-server-$port.log"
    timeout 60 ip netns exec "$NS_B" env UCX_TLS=tcp UCX_NET_DEVICES="$DEV_B" "${PIN_B[@]}" \
        ucx_perftest -p "$port" "$@" >"$slog" 2>&1 &
    local spid=$!
    PIDS+=("$spid")
    wait_listen "$port"
    local out
    out=$(timeout 60 ip netns exec "$NS_A" env UCX_TLS=tcp UCX_NET_DEVICES="$DEV_A" "${PIN_A[@]}" \
          ucx_perftest "$ADDR_B" -p "$port" "$@" 2>&1) || true
    wait "$spid" 2>/dev/null || true
    PT_FINAL=$(grep '^Final:' <<<"$out" || true)
    [ -n "$PT_FINAL" ] || { echo "$out" >&2; cat "$slog" >&2; die "ucx_perftest $* gave no Final line"; }
}

ours() {
    local out
    out=$(in_a "$CLI" client --server "$ADDR_B" --port "$PORT_OURS" "$@" 2>&1) || {
        echo "$out" >&2; cat "$LOGDIR/ours-server.log" >&2; die "our probe failed: $*"; }
    echo "$out"
}

BW_PT_ARGS=(-t ucp_put_bw -s "$BW_SIZE" -n "$BW_ITERS" -O "$OUTSTANDING" -w "$BW_WARMUP")
LAT_PT_ARGS=(-t ucp_put_lat -s "$LAT_SIZE" -n "$LAT_ITERS" -w "$LAT_WARMUP")

echo "# rocewatch UCX put probes vs ucx_perftest over veth ($ADDR_A -> $ADDR_B), UCX_TLS=tcp"
echo "# $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $(ucx_info -v | grep -m1 -i version | sed 's/^# *//')"
echo "# pinning: side A ${PIN_A[*]:-unpinned}, side B ${PIN_B[*]:-unpinned}"
echo "# ucx_perftest [server] ${BW_PT_ARGS[*]}"
echo "# ucx_perftest [server] ${LAT_PT_ARGS[*]}"
echo "# ours: ucx_probe_cli client --mode bw --size $BW_SIZE --iters $BW_ITERS --outstanding $OUTSTANDING;" \
     "--mode lat --size $LAT_SIZE --iters $LAT_ITERS"
echo
echo "## put bandwidth, ${BW_ITERS} x ${BW_SIZE} bytes, ${OUTSTANDING} outstanding (Gbit/s)"
printf '%-4s %10s %10s %8s\n' run ours perftest ratio
BW_OURS=() BW_REF=() BW_R=()
for run in $(seq "$RUNS"); do
    # Alternate who goes first, so that a drift in the host's load does not favour one.
    for who in $( [ $((run % 2)) = 1 ] && echo "ours ref" || echo "ref ours"); do
        if [ "$who" = ours ]; then
            o=$(ours --mode bw --size "$BW_SIZE" --iters "$BW_ITERS" --outstanding "$OUTSTANDING")
            obw=$(jq -r '.bandwidth_bytes_per_second * 8 / 1e9' <<<"$o")
            obw=$(printf '%.3f' "$obw")
        else
            perftest "${BW_PT_ARGS[@]}"
            # Final: iters typical avg overall bw_avg bw_overall(MiB/s) rate_avg rate_overall
            rbw=$(awk '{ printf "%.3f", $7 * 1048576 * 8 / 1e9 }' <<<"$PT_FINAL")
        fi
    done
    r=$(ratio "$obw" "$rbw")
    printf '%-4s %10s %10s %8s\n' "$run" "$obw" "$rbw" "$r"
    BW_OURS+=("$obw") BW_REF+=("$rbw") BW_R+=("$r")
done

echo
echo "## put latency, ${LAT_SIZE}-byte ping-pong x ${LAT_ITERS}, half round trip, median (us)"
printf '%-4s %10s %10s %8s %12s %12s\n' run ours perftest ratio ours_mean pt_overall
LAT_OURS=() LAT_REF=() LAT_R=()
for run in $(seq "$RUNS"); do
    for who in $( [ $((run % 2)) = 1 ] && echo "ours ref" || echo "ref ours"); do
        if [ "$who" = ours ]; then
            o=$(ours --mode lat --size "$LAT_SIZE" --iters "$LAT_ITERS")
            olat=$(jq -r '.latency_seconds.typical * 1e6' <<<"$o")
            olat=$(printf '%.3f' "$olat")
            omean=$(printf '%.3f' "$(jq -r '.latency_seconds.mean * 1e6' <<<"$o")")
        else
            perftest "${LAT_PT_ARGS[@]}"
            rlat=$(awk '{ printf "%.3f", $3 }' <<<"$PT_FINAL")
            ravg=$(awk '{ printf "%.3f", $5 }' <<<"$PT_FINAL")
        fi
    done
    r=$(ratio "$olat" "$rlat")
    printf '%-4s %10s %10s %8s %12s %12s\n' "$run" "$olat" "$rlat" "$r" "$omean" "$ravg"
    LAT_OURS+=("$olat") LAT_REF+=("$rlat") LAT_R+=("$r")
done

echo
mbo=$(echo "${BW_OURS[*]}" | median) mbr=$(echo "${BW_REF[*]}" | median) mbx=$(echo "${BW_R[*]}" | median)
mlo=$(echo "${LAT_OURS[*]}" | median) mlr=$(echo "${LAT_REF[*]}" | median) mlx=$(echo "${LAT_R[*]}" | median)
# The verdicts use the median of the per-run ratios: each ratio compares two runs taken
# back to back, which cancels most of the drift in the host's load between rounds.
bw_ok=$(awk -v r="$mbx" 'BEGIN { print (r >= 0.95) ? "yes" : "no" }')
lat_ok=$(awk -v r="$mlx" 'BEGIN { print (r >= 0.95 && r <= 1.05) ? "yes" : "no" }')
echo "## medians over $RUNS runs"
printf 'bandwidth: ours %s Gbit/s, ucx_perftest %s Gbit/s; ours/perftest: %s median of per-run ratios, %s ratio of medians (goal >= 0.95: %s)\n' \
    "$mbo" "$mbr" "$mbx" "$(ratio "$mbo" "$mbr")" "$bw_ok"
printf 'latency:   ours %s us, ucx_perftest %s us; ours/perftest: %s median of per-run ratios, %s ratio of medians (goal within 5%%: %s)\n' \
    "$mlo" "$mlr" "$mlx" "$(ratio "$mlo" "$mlr")" "$lat_ok"
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
