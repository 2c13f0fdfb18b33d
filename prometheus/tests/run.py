#!/usr/bin/env python3
"""The shipped rules' checks for meson: `run.py check` (promtool check rules), `run.py test`
(promtool test rules on every prometheus/tests/*.test.yml), `run.py generated` (the committed
test file is what gen_tests.py writes). Without promtool: a skip, or a failure in CI."""
import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RULES = os.path.join(HERE, "..", "rocewatch-rules.yml")


def main():
    what = sys.argv[1]
    if what == "generated":
        sys.exit(subprocess.run([sys.executable, os.path.join(HERE, "gen_tests.py"), "--check"]).returncode)
    if not shutil.which("promtool"):
        if os.environ.get("CI", "") not in ("", "0", "false"):
            print("FAIL: needs promtool (Debian package prometheus; scripts/deps.sh test)")
            sys.exit(1)
        print("SKIP: needs promtool (Debian package prometheus)")
        sys.exit(77)
    if what == "check":
        args = ["promtool", "check", "rules", RULES]
    else:
        args = ["promtool", "test", "rules"] + sorted(glob.glob(os.path.join(HERE, "*.test.yml")))
    r = subprocess.run(args, capture_output=True, text=True)
    print(r.stdout + r.stderr)
    # promtool check rules exits 0 on lint warnings too: any warning fails here.
    if what == "check" and "warning" in (r.stdout + r.stderr).lower():
        sys.exit(1)
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
