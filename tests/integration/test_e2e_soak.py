#!/usr/bin/env python3
"""The soak (bench/soak.py) cut short for CI: every fault kind at least once against two real
daemons in namespaces, with the same pass/fail criteria as a long run."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import rwtest  # noqa: E402

SOAK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "soak.py")


def main():
    rwtest.require_root()
    out = tempfile.mkdtemp(prefix="rw-soak-ci-")
    # One pass over the eight fault kinds takes about 40 s; 80 s gives every kind a turn.
    r = subprocess.run([sys.executable, SOAK, "--duration", os.environ.get("ROCEWATCH_SOAK_SECONDS", "80"),
                        "--fault-every", "1", "--sample-every", "2", "--out", out])
    if r.returncode == rwtest.SKIP:
        sys.exit(rwtest.SKIP)
    t = rwtest.Results()
    t.check(r.returncode == 0, f"the short soak passes its criteria (exit {r.returncode}, outputs in {out})")
    import csv
    with open(os.path.join(out, "faults.csv")) as f:
        kinds = {row["kind"] for row in csv.DictReader(f)}
    want = {"link_flap", "counter_rise", "counter_reset", "reload_good", "reload_bad", "state_full",
            "state_read_only", "peer_kill"}
    t.check(want <= kinds, f"every fault kind was injected (missing: {sorted(want - kinds)})")
    if r.returncode == 0:
        subprocess.run(["rm", "-rf", out])
    t.finish()


if __name__ == "__main__":
    main()
