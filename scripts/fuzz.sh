#!/usr/bin/env bash
# Builds every parser's fuzzer with clang's libFuzzer under ASan+UBSan (build-fuzz) and runs
# each for a bounded time as meson tests (suite fuzz). Usage: scripts/fuzz.sh [--build-only] [meson test args]
# FUZZ_SECONDS: per fuzzer (default 25); JOBS: build parallelism (default 2).
# A crash fails its test; the input is in build-fuzz/tests/fuzz/fuzz-artifacts/<fuzzer>/:
# fix the parser and copy the input to tests/fuzz/regressions/<name>/, which the gcc build
# replays in the unit suite from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${FUZZ_BUILD_DIR:-build-fuzz}
build_only=0
[[ "${1:-}" == --build-only ]] && { build_only=1; shift; }
start=$SECONDS
if [[ ! -f $dir/build.ninja ]]; then
  # fuzzer-no-link: the parsers' libraries carry coverage instrumentation for libFuzzer;
  # no-sanitize-recover: undefined behaviour is a crash the fuzzer keeps, not a log line.
  CC=clang CXX=clang++ meson setup "$dir" -Dtests=enabled -Dfuzzing=true -Dbuildtype=debugoptimized -Dunity=on \
    -Db_sanitize=address,undefined -Db_lundef=false \
    -Dcpp_args='-fsanitize=fuzzer-no-link -fno-sanitize-recover=all -fno-omit-frame-pointer'
fi
# Only the fuzzers and what they link: the rest of the tree is not needed here.
mapfile -t targets < <(meson introspect "$dir" --targets |
  python3 -c 'import json,sys; [print(t["filename"][0]) for t in json.load(sys.stdin) if t["name"].startswith("fuzz_")]')
ninja -C "$dir" -j"${JOBS:-2}" "${targets[@]/#$PWD\/$dir\//}"
echo "fuzz build: $((SECONDS - start)) s"
((build_only)) && exit 0
start=$SECONDS
rc=0
meson test -C "$dir" --no-rebuild --suite fuzz --print-errorlogs "$@" || rc=$?
# Executions, speed and coverage of each run, from libFuzzer's final stats in the log.
python3 - "$dir/meson-logs/testlog.json" <<'PY' || true
import json, re, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    out = t.get("stdout", "") + t.get("stderr", "")
    stat = lambda k: (re.findall(rf"stat::{k}:\s+(\d+)", out) or ["?"])[-1]
    cov = (re.findall(r"cov: (\d+) ft: (\d+)", out) or [("?", "?")])[-1]
    print(f'{t["name"]:<22} {t["result"]:<5} execs {stat("number_of_executed_units"):>9}  '
          f'exec/s {stat("average_exec_per_sec"):>7}  cov {cov[0]:>5}  ft {cov[1]:>6}  '
          f'rss {stat("peak_rss_mb")} MB')
PY
echo "fuzz run: $((SECONDS - start)) s"
exit $rc
