#!/usr/bin/env bash
# Runs one libFuzzer binary for a bounded time (FUZZ_SECONDS, default 25) from the repo's
# seeds and regressions; new inputs go to a scratch corpus in the build dir, never the repo.
# A crash fails the test and leaves its input under <builddir>/fuzz-artifacts/<name>/.
set -euo pipefail
exe=$1; shift  # then the seed and regression dirs
name=$(basename "$exe")
work=$(dirname "$exe")/fuzz-work/$name
art=$(dirname "$exe")/fuzz-artifacts/$name
mkdir -p "$work" "$art"
dirs=("$work" "$@")
[[ -n ${FUZZ_DICT:-} ]] && dirs=(-dict="$FUZZ_DICT" "${dirs[@]}")
# -rss_limit_mb: a parser that balloons on a small input is a finding, not an OOM of the box.
exec "$exe" -max_total_time="${FUZZ_SECONDS:-25}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$art/" "${dirs[@]}"
