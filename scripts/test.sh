#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test suite (unit, netns, e2e, vm).
# Tests that need root or the VM fail in CI (CI=true) when they cannot run; outside CI they skip
# and say why.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
opts=(-Dtests=enabled)
# CI builds with -Werror: a warning fails the build there, before anyone reads past it.
[[ "${CI:-}" == true || "${CI:-}" == 1 ]] && opts+=(-Dwerror=true)
if [[ -f build/build.ninja ]]; then meson configure build "${opts[@]}" >/dev/null
else meson setup build "${opts[@]}"; fi
ninja -C build
rc=0
meson test -C build --print-errorlogs --num-processes 2 "$@" || rc=$?
# One closing line any CI reader understands, from meson's own log.
python3 - build/meson-logs/testlog.json <<'PY' || rc=1
import json, os, sys
counts = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    counts[r["result"]] = counts.get(r["result"], 0) + 1
ok = counts.get("OK", 0) + counts.get("EXPECTEDFAIL", 0)
skipped = counts.get("SKIP", 0)
failed = sum(v for k, v in counts.items() if k not in ("OK", "EXPECTEDFAIL", "SKIP"))
print(f"{ok} passed, {failed} failed, {skipped} skipped")
if os.environ.get("CI") in ("true", "1") and skipped:
    print("CI runs every test: a skipped test is a failure here", file=sys.stderr)
    sys.exit(1)
sys.exit(1 if failed else 0)
PY
exit $rc
