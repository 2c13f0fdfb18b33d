#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite (unit, netns, e2e, vm), then
# (full runs) the unit, netns and e2e suites under ASan+UBSan, the threaded parts under TSan
# and every fuzzer for a bounded time: scripts/sanitize.sh, scripts/fuzz.sh.
# Tests that need root or the VM fail in CI (CI=true) when they cannot run; outside CI they skip
# and say why.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
opts=(-Dtests=enabled)
# CI builds with -Werror: a warning fails the build there, before anyone reads past it. And as
# a unity build (four sources a compile, a third less time on 2 cores); the package build
# (pkg_deb) still compiles every source on its own, so a missing #include shows there.
[[ "${CI:-}" == true || "${CI:-}" == 1 ]] && opts+=(-Dwerror=true -Dunity=on)
if [[ -f build/build.ninja ]]; then meson configure build "${opts[@]}" >/dev/null
else meson setup build "${opts[@]}"; fi
ninja -C build
rc=0
full=0
(($# == 0)) && [[ "${ROCEWATCH_QUICK:-}" != 1 ]] && full=1
logs=(build/meson-logs/testlog.json)
# A full run (no arguments) also runs the suites under sanitizers and the fuzzers, each in
# its own build dir (ROCEWATCH_QUICK=1 leaves them out). Their meson logs count below; an
# old log is removed first, so a stage that never got to its tests counts as failed.
if ((full)); then
  for d in build-asan build-tsan build-fuzz; do rm -f "$d/meson-logs/testlog.json"; logs+=("$d/meson-logs/testlog.json"); done
  # Their builds (most of a cold run's compile time) go on while the main suites run, at
  # SCHED_IDLE: they get only the CPU the tests leave idle (the tests wait on sockets, timers
  # and guests much of the time), and a test's process always runs before them. ASan first;
  # TSan and the fuzzers after it, and on while the ASan suites run. Each in its own session,
  # so that an interrupted run stops them (and their compilers) by process group. A new
  # session is also a new scheduling group where the kernel groups tasks by session
  # (sched_autogroup_enabled=1, Debian's default), and groups share the CPU equally whatever
  # their tasks' policy: SCHED_IDLE alone left the tests half the machine (two busy loops took
  # 12.8 s beside two SCHED_IDLE loops in their own session, 6.1 s alone), so the group gets
  # nice 19 too (5.7 s).
  policy=(chrt --idle 0)
  "${policy[@]}" true 2>/dev/null || policy=(nice -n 19)
  idle=(setsid -w bash -c 'echo 19 > /proc/self/autogroup 2>/dev/null || true; exec "$@"' _ "${policy[@]}")
  bg_groups=()
  trap 'for g in "${bg_groups[@]}"; do kill -- "-$g" 2>/dev/null || true; done' EXIT
  "${idle[@]}" scripts/sanitize.sh --build-only asan > build/background-asan.log 2>&1 &
  bg_asan=$!
  bg_groups+=("$bg_asan")
  "${idle[@]}" bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 2; done
    scripts/sanitize.sh --build-only tsan && scripts/fuzz.sh --build-only' _ "$bg_asan" > build/background-tsan-fuzz.log 2>&1 &
  bg_rest=$!
  bg_groups+=("$bg_rest")
fi
meson test -C build --print-errorlogs --num-processes 2 "$@" || rc=$?
if ((full)); then
  background() {  # pid, log: waits, then says how long the build took and how long it was waited for
    local start=$SECONDS brc=0
    wait "$1" || brc=$?
    echo "waited $((SECONDS - start)) s for $(grep -hE '^[a-z]+ build: [0-9]+ s$' "$2" | paste -sd, -) (background, $2)"
    ((brc == 0)) || { tail -n 40 "$2"; echo "background build failed ($2); the stage builds again below"; }
  }
  background "$bg_asan" build/background-asan.log
  scripts/sanitize.sh asan || rc=1
  background "$bg_rest" build/background-tsan-fuzz.log
  scripts/sanitize.sh tsan || rc=1
  scripts/fuzz.sh || rc=1
fi
# One closing line any CI reader understands, from meson's own logs.
python3 - "${logs[@]}" <<'PY' || rc=1
import json, os, sys
counts, failed_names = {}, []
for log in sys.argv[1:]:
    if not os.path.exists(log):
        print(f"{log}: no test results (its stage failed before running tests)", file=sys.stderr)
        counts["ERROR"] = counts.get("ERROR", 0) + 1
        continue
    for line in open(log):
        r = json.loads(line)
        counts[r["result"]] = counts.get(r["result"], 0) + 1
        if r["result"] not in ("OK", "EXPECTEDFAIL", "SKIP"):
            failed_names.append(f'{os.path.dirname(os.path.dirname(log))}: {r["name"]} ({r["result"]})')
            # The failed checks themselves, so the log's tail says why and not only what.
            out = (r.get("stdout") or "").splitlines()
            why = [l for l in out if "FAIL" in l or l.startswith("not ok") or "Failure" in l
                   or "Sanitizer" in l or "runtime error:" in l or (l.startswith("    #") and "../" in l and "libsanitizer" not in l)][:24]
            failed_names += [f'  {l[:300]}' for l in (why or out[-5:])]
ok = counts.get("OK", 0) + counts.get("EXPECTEDFAIL", 0)
skipped = counts.get("SKIP", 0)
failed = sum(v for k, v in counts.items() if k not in ("OK", "EXPECTEDFAIL", "SKIP"))
for name in failed_names:  # last, so that a reader of the log's tail sees what failed
    print(name if name.startswith("  ") else f"FAILED {name}")
print(f"{ok} passed, {failed} failed, {skipped} skipped")
if os.environ.get("CI") in ("true", "1") and skipped:
    print("CI runs every test: a skipped test is a failure here", file=sys.stderr)
    sys.exit(1)
sys.exit(1 if failed else 0)
PY
exit $rc
