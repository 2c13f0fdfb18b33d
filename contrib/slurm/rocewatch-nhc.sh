#!/bin/sh
# rocewatch-nhc.sh: a Slurm node health check that drains this node on rocewatch's
# node-scoped alerts only. A dead peer, or a bad path to one, is that peer's or the
# fabric's problem: draining the node that noticed it would take good nodes out.
#
# Use it as slurm.conf's HealthCheckProgram (or call it from NHC / your own check):
#   HealthCheckProgram=/usr/share/rocewatch/contrib/slurm/rocewatch-nhc.sh
#   HealthCheckInterval=300
#
# It runs `rocewatchd --once` (JSON) and reads it with python3. Environment:
#   ROCEWATCHD            the daemon binary (default: rocewatchd on PATH, else /usr/sbin/rocewatchd)
#   ROCEWATCH_ARGS        more flags for --once (e.g. "--config /etc/rocewatch/rocewatch.toml")
#   ROCEWATCH_DRAIN_ON    severities that drain, comma separated (default: critical)
#   SCONTROL              the scontrol binary (default: scontrol)
#   NODENAME              the Slurm node name (default: hostname -s)
# Exit status: 0 nothing to drain on, 1 drained, 3 rocewatch could not judge (not drained:
# a broken check must not drain the cluster; Slurm logs the message).
set -u

if [ -z "${ROCEWATCHD:-}" ]; then
    ROCEWATCHD=$(command -v rocewatchd 2>/dev/null || echo /usr/sbin/rocewatchd)
fi
SCONTROL=${SCONTROL:-scontrol}
NODENAME=${NODENAME:-$(hostname -s)}
DRAIN_ON=${ROCEWATCH_DRAIN_ON:-critical}

# shellcheck disable=SC2086  # ROCEWATCH_ARGS is a list of flags
out=$("$ROCEWATCHD" --once --format json --log-level error ${ROCEWATCH_ARGS:-})
rc=$?
if [ "$rc" -gt 2 ]; then
    echo "rocewatch-nhc: rocewatchd --once could not judge this node (exit $rc); not draining" >&2
    exit 3
fi

# One line: "rule object; rule object" for the firing node-scoped alerts of a draining severity.
reasons=$(printf '%s' "$out" | DRAIN_ON="$DRAIN_ON" python3 -c '
import json, os, sys
try:
    doc = json.load(sys.stdin)
except ValueError:
    sys.exit(3)
drain_on = {s.strip() for s in os.environ["DRAIN_ON"].split(",") if s.strip()}
hits = [a["rule"] + " " + a["object"] for a in doc.get("alerts", [])
        if a.get("scope", "node") == "node" and a.get("state") == "firing" and a.get("severity") in drain_on]
print("; ".join(hits))
')
prc=$?
if [ "$prc" -ne 0 ]; then
    echo "rocewatch-nhc: rocewatchd --once printed no JSON; not draining" >&2
    exit 3
fi
[ -z "$reasons" ] && exit 0

# Slurm keeps a reason short; the alert list is cut, the full story is in `rocewatchd --once --format text`.
reason=$(printf 'rocewatch: %s' "$reasons" | cut -c1-200)
echo "rocewatch-nhc: draining $NODENAME: $reason" >&2
"$SCONTROL" update NodeName="$NODENAME" State=DRAIN Reason="$reason"
exit 1
