#!/usr/bin/env python3
"""Generates prometheus/tests/rocewatch-rules.test.yml: `promtool test rules` cases for the
shipped rules. A synthetic cluster (9 nodes in 3 racks, rails a and b, a full probe mesh with
tcp_lat and tcp_bw) gets one fault per case; each case expects the right alert naming the right
culprit, and lists every other alert with no firing instance, so that nobody else is blamed.

  gen_tests.py            writes the file
  gen_tests.py --check    exits 1 when the committed file differs from what it would write
"""
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
RULES = os.path.join(HERE, "..", "rocewatch-rules.yml")
OUT = os.path.join(HERE, "rocewatch-rules.test.yml")

NODES = [(f"10.0.0.{i + 1}:9879", f"r{i // 3}") for i in range(9)]
RAILS = ["a", "b"]
JOB = "rocewatch"
BASE_LAT = 50e-6
BASE_BW = 1e9


def node(i):
    return NODES[i][0]


def rules():
    with open(RULES) as f:
        doc = yaml.safe_load(f)
    return {r["alert"]: r for g in doc["groups"] for r in g["rules"] if "alert" in r}


def render(template, labels):
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), template)


def fmt_labels(labels):
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


class Cluster:
    """Per (prober, target, rail): success, latency p50 (seconds) and bandwidth (bytes/s)."""

    def __init__(self, peer_label=lambda inst: inst):
        self.peer_label = peer_label
        self.paths = {}
        for s, _ in NODES:
            for t, _ in NODES:
                if s != t:
                    for r in RAILS:
                        self.paths[(s, t, r)] = {"ok": 1, "lat": BASE_LAT, "bw": BASE_BW, "bw_ok": None}
        self.extra = []

    def set(self, pred, **kv):
        for (s, t, r), p in self.paths.items():
            if pred(s, t, r):
                p.update(kv)
        return self

    def series(self):
        out = []
        racks = dict(NODES)
        for inst, rack in NODES:
            out.append({"series": "rocewatch_health_status" + fmt_labels({"instance": inst, "job": JOB, "rack": rack}),
                        "values": "0x15"})
        for (s, t, r), p in sorted(self.paths.items()):
            base = {"instance": s, "job": JOB, "rack": racks[s], "peer": self.peer_label(t), "rail": r}
            # The latency probe runs every minute; the bandwidth probe ran once, at the start.
            for kind, ok, started in (("tcp_lat", p["ok"], "60+60x15"),
                                      ("tcp_bw", p["ok"] if p["bw_ok"] is None else p["bw_ok"], "0x15")):
                out.append({"series": "rocewatch_probe_success" + fmt_labels({**base, "kind": kind}),
                            "values": f"{ok}x15"})
                out.append({"series": "rocewatch_probe_last_run_timestamp_seconds" +
                            fmt_labels({**base, "kind": kind}), "values": started})
            # A failed probe keeps its last figures in /metrics: the rules must ignore them.
            lat = {**base, "kind": "tcp_lat"}
            out.append({"series": "rocewatch_probe_latency_seconds" + fmt_labels({**lat, "quantile": "0.5"}),
                        "values": f"{p['lat']:g}x15"})
            # p99 is noisy (a third of the nodes at 100x their p50): a rule using it would see outliers.
            out.append({"series": "rocewatch_probe_latency_seconds" + fmt_labels({**lat, "quantile": "0.99"}),
                        "values": f"{p['lat'] * (2 if NODES.index((s, racks[s])) % 3 else 100):g}x15"})
            out.append({"series": "rocewatch_probe_bandwidth_bytes_per_second" +
                        fmt_labels({**base, "kind": "tcp_bw"}), "values": f"{p['bw']:g}x15"})
        return out + self.extra


def case(name, cluster, expected, catalog):
    """expected: {alertname: [labels, ...]}; every other alert must not fire."""
    tests = []
    for alert, rule in sorted(catalog.items()):
        exp = []
        for labels in expected.get(alert, []):
            full = {**labels, **rule.get("labels", {})}
            exp.append({"exp_labels": dict(sorted(full.items())),
                        "exp_annotations": {k: render(v, full) for k, v in sorted(rule["annotations"].items())}})
        tests.append({"eval_time": "10m", "alertname": alert, "exp_alerts": exp})
    return {"name": name, "interval": "1m", "input_series": cluster.series(), "alert_rule_test": tests}


def r(i):
    return NODES[i][1]


def main():
    catalog = rules()
    cases = []
    cases.append(case("healthy mesh: nothing fires", Cluster(), {}, catalog))

    # 1. Node 2's rail b drops everything, both ways.
    c = Cluster().set(lambda s, t, rl: rl == "b" and node(2) in (s, t), ok=0)
    cases.append(case("one node's rail b is dead: that node and rail, nobody else", c,
                      {"RocewatchNodeRailDown": [{"instance": node(2), "rack": r(2), "rail": "b"}]}, catalog))

    # 1b. The same, seen early: node 2's own probes on rail b still show old successes but two
    #     (its worker is stuck in timeouts); its failing paths are explained by its dead rail.
    c = Cluster().set(lambda s, t, rl: rl == "b" and t == node(2), ok=0)
    c.set(lambda s, t, rl: rl == "b" and s == node(2) and t in (node(7), node(8)), ok=0)
    cases.append(case("a dead rail seen while the node's own probes lag: no path blamed", c,
                      {"RocewatchNodeRailDown": [{"instance": node(2), "rack": r(2), "rail": "b"}]}, catalog))

    # 1c. The same, where only the latency probes fail: every bandwidth probe's success is older
    #     than them (the bandwidth interval is long) and must not hold the rail up.
    c = Cluster().set(lambda s, t, rl: rl == "b" and node(2) in (s, t), ok=0, bw_ok=1)
    cases.append(case("a dead rail whose older bandwidth probes succeeded: that node and rail", c,
                      {"RocewatchNodeRailDown": [{"instance": node(2), "rack": r(2), "rail": "b"}]}, catalog))

    # 2. The path between nodes 1 and 5 on rail a drops, both ways; peers named by host alone.
    pair = {node(1), node(5)}
    c = Cluster(peer_label=lambda inst: inst.split(":")[0]).set(
        lambda s, t, rl: rl == "a" and {s, t} == pair, ok=0)
    cases.append(case("one pair's path on rail a: a path alert each way, neither node blamed", c, {
        "RocewatchPathDown": [
            {"instance": node(a), "job": JOB, "rack": r(a), "peer": node(b).split(":")[0], "rail": "a",
             "target_instance": node(b), "target_rack": r(b)} for a, b in ((1, 5), (5, 1))]}, catalog))

    # 3. Rack r1's nodes get +5 ms on rail a (each way): +2.5 ms half round trip across racks.
    in_r1 = {node(i) for i in range(9) if r(i) == "r1"}
    c = Cluster()
    for (s, t, rl), p in c.paths.items():
        if rl == "a":
            p["lat"] = BASE_LAT + 2.5e-3 * ((s in in_r1) + (t in in_r1))
    cases.append(case("rack r1 slow on rail a: a rack alert, no node blamed", c,
                      {"RocewatchRackRailSlow": [{"rack": "r1", "rail": "a", "kind": "tcp_lat"}]}, catalog))
    # ... and the latency costs one of its nodes TCP bandwidth: still the rack alone.
    c.set(lambda s, t, rl: rl == "a" and s == node(4), bw=BASE_BW / 4)
    cases.append(case("rack r1 slow on rail a, one of its nodes' bandwidth down with it: the rack alone", c,
                      {"RocewatchRackRailSlow": [{"rack": "r1", "rail": "a", "kind": "tcp_lat"}]}, catalog))

    # 4. Node 6 sends at a tenth of the others' bandwidth on rail a.
    c = Cluster().set(lambda s, t, rl: rl == "a" and s == node(6), bw=BASE_BW / 10)
    cases.append(case("one node's rail a at a tenth of the bandwidth: a bandwidth outlier", c, {
        "RocewatchNodeRailBandwidthLow": [{"instance": node(6), "rack": r(6), "rail": "a", "kind": "tcp_bw"}]},
        catalog))

    # 5. Node 3 alone is slow on rail b.
    c = Cluster()
    for (s, t, rl), p in c.paths.items():
        if rl == "b" and node(3) in (s, t):
            p["lat"] = BASE_LAT + 1e-3
    cases.append(case("one node slow on rail b: a node latency outlier", c, {
        "RocewatchNodeRailSlow": [{"instance": node(3), "rack": r(3), "rail": "b", "kind": "tcp_lat"}]}, catalog))

    # 6. Rack r0 is cut off on rail b (its switch's uplink): inside the rack the rail works.
    in_r0 = {node(i) for i in range(9) if r(i) == "r0"}
    c = Cluster().set(lambda s, t, rl: rl == "b" and ((s in in_r0) != (t in in_r0)), ok=0)
    cases.append(case("rack r0 cut off on rail b: a rack alert, no node or path blamed", c,
                      {"RocewatchRackRailDown": [{"rack": "r0", "rail": "b"}]}, catalog))

    # 7. Node 4 cannot reach anyone on rail a, but everybody reaches it (its own config).
    c = Cluster().set(lambda s, t, rl: rl == "a" and s == node(4), ok=0)
    cases.append(case("a node that cannot reach its peers while they reach it: its own side", c, {
        "RocewatchNodeRailCannotReachPeers": [{"instance": node(4), "rack": r(4), "rail": "a"}]}, catalog))

    # 8. Rail b is down everywhere.
    c = Cluster().set(lambda s, t, rl: rl == "b", ok=0)
    cases.append(case("rail b down cluster-wide: one rail alert, no node or rack blamed", c,
                      {"RocewatchRailDown": [{"rail": "b"}]}, catalog))

    # 9. The daemons' own alerts: firing ones forwarded, pending ones not; a pending -> firing
    #    change keeps one alert (no resolve in between).
    c = Cluster()
    common = {"job": JOB, "object": "rocep1s0f0/1", "rule": "port_down", "severity": "critical"}
    c.extra = [
        {"series": "rocewatch_alert_active" + fmt_labels({**common, "instance": node(0), "rack": r(0),
                                                          "state": "pending"}), "values": "1x4 _x11"},
        {"series": "rocewatch_alert_active" + fmt_labels({**common, "instance": node(0), "rack": r(0),
                                                          "state": "firing"}), "values": "_x4 1x11"},
        {"series": "rocewatch_alert_active" + fmt_labels({**common, "instance": node(1), "rack": r(1),
                                                          "state": "pending"}), "values": "1x15"},
    ]
    cases.append(case("daemon alerts: firing ones forwarded with their rule and object, pending ones not", c, {
        "RocewatchDaemonAlert": [{**common, "instance": node(0), "rack": r(0), "state": "firing"}]}, catalog))

    # 10. Rotating probers: node 7 fails the rotating probes of two nodes on rail a (its ring
    #     neighbours reach it); one prober alone naming node 5 on rail b is not enough.
    c = Cluster()
    def failing(prober, peer, rail):
        return {"series": "rocewatch_mesh_failing_peer" + fmt_labels({
            "instance": node(prober), "job": JOB, "rack": r(prober), "rail": rail, "kind": "tcp_lat",
            "peer": node(peer), "reason": "timeout"}), "values": "1x15"}
    c.extra = [failing(0, 7, "a"), failing(3, 7, "a"), failing(1, 5, "b")]
    cases.append(case("two rotating probers fail to reach one node on rail a: that node, not the lone report", c, {
        "RocewatchMeshPeerRailFailing": [{"peer": node(7), "rail": "a"}]}, catalog))

    doc = {"rule_files": ["../rocewatch-rules.yml"], "evaluation_interval": "1m", "tests": cases}
    text = ("# Generated by prometheus/tests/gen_tests.py: edit that, then run it.\n" +
            yaml.safe_dump(doc, sort_keys=False, width=200))
    if "--check" in sys.argv:
        with open(OUT) as f:
            if f.read() != text:
                print(f"{OUT} is stale: run {sys.argv[0]}")
                sys.exit(1)
        print(f"{OUT} is up to date")
        return
    with open(OUT, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
