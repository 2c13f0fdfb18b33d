#!/bin/bash
# A cycle's costly stages in two builds side by side: bench/cycle_stages of each, alternated
# RUNS times on one tree; per stage the median of the runs' medians, and the ratio new/base.
# Both builds must render the same /metrics text (its hash is compared).
#
#   bench/stages_side_by_side.sh BASE_CYCLE_STAGES NEW_CYCLE_STAGES SYSFS_ROOT [RUNS] [ROUNDS]
# The base is built from the commit before, in a worktree with this directory copied in:
#   git worktree add /tmp/base HEAD~1 && cp bench/cycle_stages.cpp bench/meson.build /tmp/base/bench/
#   (and meson.build's subdir('bench')), then meson setup and ninja bench/cycle_stages there.
set -euo pipefail
base=$1 new=$2 tree=$3 runs=${4:-9} rounds=${5:-40}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$runs"); do
  "$base" "$tree" "$rounds" >> "$out/base"
  "$new" "$tree" "$rounds" >> "$out/new"
done
hashes=$(awk '/^devices/ {print $NF}' "$out/base" "$out/new" | sort -u | wc -l)
[ "$hashes" = 1 ] || { echo "the two builds render different text" >&2; exit 1; }
head -1 "$out/new" | awk -v t="$tree" -v r="$runs" -v n="$rounds" \
  '{printf "%s: %s devices, /metrics %s B (identical in both); %s runs of %s rounds, alternated\n", t, $2, $4, r, n}'
awk '
  FNR == 1 { side = (FILENAME ~ /base$/) ? "base" : "new" }
  $1 != "devices" { v[side, $1, ++n[side, $1]] = $2 }
  function med(side, s,   k, i, j, t, a) {
    k = n[side, s]; for (i = 1; i <= k; i++) a[i] = v[side, s, i]
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((k + 1) / 2)]
  }
  END {
    printf "%-8s %10s %10s %9s\n", "stage", "base ms", "new ms", "new/base"
    split("read trends render deflate", order)
    for (o = 1; o <= 4; o++) { s = order[o]; b = med("base", s); x = med("new", s)
      printf "%-8s %10.3f %10.3f %9.2f\n", s, b, x, x / b }
  }' "$out/base" "$out/new"
