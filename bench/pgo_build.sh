#!/bin/sh
# What a profile-guided build would give the daemon (docs/figures.md, stop 48): the package's
# build (LTO) and the same build with GCC's profile feedback, trained on the cycle as it runs.
#
#     sudo bench/pgo_build.sh OUT TREE...    # TREE as bench/memory_vs_node_exporter.py takes it
#
# OUT/lto and OUT/pgo get the two daemons; the training run is memory_vs_node_exporter.py
# against the instrumented one (its collection, render and gzip scrapes), which writes the
# profile on SIGTERM. Then compare them, for instance
#     for b in lto pgo pgo lto; do ROCEWATCHD=OUT/$b/daemon/rocewatchd \
#         bench/memory_vs_node_exporter.py --scrapes 4 --gap 15 --mappings TREE; done
#     ROCEWATCHD_BASE=OUT/lto/daemon/rocewatchd ROCEWATCHD=OUT/pgo/daemon/rocewatchd \
#         bench/collect_cpu.py --strace 0 --interval 1s TREE    # and again with the two swapped
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OUT TREE..." >&2; exit 2; }
out=$1
shift
src=$(cd "$(dirname "$0")/.." && pwd)
opts="-Dtests=disabled -Ducx=enabled -Dlldp=enabled -Db_lto=true"

# shellcheck disable=SC2086  # opts is a list of words
meson setup "$out/lto" "$src" $opts
ninja -C "$out/lto" daemon/rocewatchd

# shellcheck disable=SC2086
meson setup "$out/pgo" "$src" $opts -Db_pgo=generate
ninja -C "$out/pgo" daemon/rocewatchd
ROCEWATCHD="$out/pgo/daemon/rocewatchd" python3 "$src/bench/memory_vs_node_exporter.py" --scrapes 4 --gap 5 "$@"
echo "profile: $(find "$out/pgo" -name '*.gcda' | wc -l) .gcda files"
meson configure "$out/pgo" -Db_pgo=use
ninja -C "$out/pgo" daemon/rocewatchd

size "$out/lto/daemon/rocewatchd" "$out/pgo/daemon/rocewatchd"
