#!/bin/bash
# rocewatch's RDMA verbs probes side by side with perftest on the same Soft-RoCE device:
# runs the VM scenario 'probes' (tests/vm/scenarios/probes.sh) with BENCH_ROUNDS rounds that
# alternate our write bandwidth / ib_write_bw and our write latency / ib_write_lat on rail A
# (rxe0 <-> rxe0 between the two guests, GID index 1, 64 KiB x BW_ITERS writes, 2-byte x
# LAT_ITERS ping-pongs) and prints the medians and the ratios ours / perftest.
#
#   bench/rdma_probe_vs_perftest.sh [BUILD_DIR]     # as root; BUILD_DIR default build/
#   BENCH_ROUNDS=5 BW_ITERS=400 bench/rdma_probe_vs_perftest.sh /tmp/build-main
#
# The guests run under TCG (software CPU): tens of MB/s and hundreds of microseconds, so
# the ratios say whether our method costs more than perftest's on the same path, not what
# real hardware would do. The scenario's own checks (per-rail bytes, cable pull) run too.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
build=${1:-$repo/build}
cli=$build/tools/rdma_probe_cli
[[ -x $cli ]] || { echo "no $cli: ninja -C $build tools/rdma_probe_cli" >&2; exit 2; }
scen=$(mktemp -d /tmp/rdma-bench-scenarios.XXXXXX)
trap 'rm -rf "$scen"' EXIT
cp -r "$repo/tests/vm/scenarios/." "$scen/"
cp "$cli" "$scen/rdma_probe_cli"   # the guests see the scenario directory through the share
cat >"$scen/bench.env" <<EOT
BENCH_ROUNDS=${BENCH_ROUNDS:-3}
BW_ITERS=${BW_ITERS:-200}
LAT_ITERS=${LAT_ITERS:-200}
EOT
work=${ROCEWATCH_VM_WORK:-/tmp/rocewatch-vm}
rc=0
"$repo/tests/vm/run-scenario.sh" probes --scenarios "$scen" --timeout "${BENCH_TIMEOUT:-900}" || rc=$?
echo "==== figures (from $work/results/probes/node2/results/summary.txt) ===="
grep -h '^BENCH\|^rocewatch rdma_\|^ib_write' "$work/results/probes/node2/results/summary.txt" || true
exit $rc
