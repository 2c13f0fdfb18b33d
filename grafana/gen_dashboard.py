#!/usr/bin/env python3
"""Generates grafana/rocewatch.json, rocewatch's Grafana dashboard, so that it can be reviewed as
code. A node view (rails, counter rates, alerts, probes) for $instance and a cluster view (the
per-rail path matrix, reachability, latency and bandwidth against the rail's median, firing
alerts) over the recording rules of prometheus/rocewatch-rules.yml.

  gen_dashboard.py            writes grafana/rocewatch.json
  gen_dashboard.py --check    exits 1 when the committed file differs from what it would write
  gen_dashboard.py --queries  prints every panel's queries as JSON lines (for the e2e test)
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "rocewatch.json")
DS = {"type": "prometheus", "uid": "${datasource}"}
N = 'instance=~"$instance"'


class Layout:
    def __init__(self):
        self.panels = []
        self.y = 0
        self.x = 0
        self.row_h = 0

    def row(self, title):
        if self.x:
            self.y += self.row_h
        self.x, self.row_h = 0, 0
        self.panels.append({"type": "row", "title": title, "collapsed": False, "id": len(self.panels) + 1,
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}, "panels": []})
        self.y += 1

    def panel(self, kind, title, targets, w=12, h=8, unit=None, description="", instant=False, **extra):
        if self.x + w > 24:
            self.y += self.row_h
            self.x, self.row_h = 0, 0
        p = {"type": kind, "title": title, "description": description, "id": len(self.panels) + 1,
             "datasource": DS, "gridPos": {"h": h, "w": w, "x": self.x, "y": self.y},
             "targets": [{"datasource": DS, "refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend,
                          "instant": instant, "range": not instant, **({"format": "table"} if instant else {})}
                         for i, (expr, legend) in enumerate(targets)],
             "fieldConfig": {"defaults": {"unit": unit} if unit else {}, "overrides": []},
             "options": {}}
        p.update(extra)
        self.panels.append(p)
        self.x += w
        self.row_h = max(self.row_h, h)


def dashboard():
    L = Layout()
    L.row("Node $instance")
    L.panel("stat", "Health", [(f"rocewatch_health_status{{{N}}}", "{{instance}}")], w=4, h=5,
            description="0 healthy, 1 warning, 2 critical (the daemon's own verdict).",
            fieldConfig={"defaults": {"mappings": [{"type": "value", "options": {
                "0": {"text": "healthy", "color": "green"}, "1": {"text": "warning", "color": "orange"},
                "2": {"text": "critical", "color": "red"}}}]}, "overrides": []})
    L.panel("stat", "RDMA ports up", [(f"rocewatch_rdma_port_up{{{N}}}", "{{device}}/{{port}}")], w=10, h=5)
    L.panel("stat", "Links up (MTU)", [(f"rocewatch_link_up{{{N}}}", "{{netdev}}"),
                                       (f"rocewatch_link_mtu_bytes{{{N}}}", "{{netdev}} MTU")], w=10, h=5)
    L.panel("timeseries", "RDMA port traffic", [
        (f"rate(rocewatch_rdma_port_data_transmitted_bytes_total{{{N}}}[$__rate_interval])", "{{device}}/{{port}} tx"),
        (f"rate(rocewatch_rdma_port_data_received_bytes_total{{{N}}}[$__rate_interval])", "{{device}}/{{port}} rx")],
        unit="Bps")
    # rate() drops the metric name, so each named error family is its own query and legend.
    error_families = ("errors_received", "discards_transmitted", "symbol_error", "link_downed",
                      "link_error_recovery", "local_link_integrity_errors", "excessive_buffer_overrun_errors",
                      "receive_remote_physical_errors", "vl15_dropped")
    L.panel("timeseries", "RDMA error and congestion counters (per second)", [
        *[(f"rate(rocewatch_rdma_port_{f}_total{{{N}}}[$__rate_interval])", f"{{{{device}}}}/{{{{port}}}} {f}")
          for f in error_families],
        (f'rate(rocewatch_rdma_port_hw_counters_total{{{N},counter=~".*(cnp|ecn|timeout|error|discard|out_of).*"}}'
         "[$__rate_interval])", "{{device}}/{{port}} {{counter}}")],
        unit="ops", description="Rates of the port's error, discard, timeout and congestion counters.")
    L.panel("table", "Alerts on the node", [(f"rocewatch_alert_active{{{N}}} == 1", "")], w=24, h=6,
            instant=True, description="The daemon's own pending and firing alerts; GET /api/v1/alerts has each "
            "one's summary and action.")
    L.panel("timeseries", "Probe success", [(f"rocewatch_probe_success{{{N}}}", "{{peer}} {{rail}} {{kind}}")],
            w=8, unit="bool")
    L.panel("timeseries", "Probe latency (p50, p99)", [
        (f'rocewatch_probe_latency_seconds{{{N},quantile="0.5"}}', "{{peer}} {{rail}} {{kind}} p50"),
        (f'rocewatch_probe_latency_seconds{{{N},quantile="0.99"}}', "{{peer}} {{rail}} {{kind}} p99")],
        w=8, unit="s")
    L.panel("timeseries", "Probe bandwidth", [
        (f"rocewatch_probe_bandwidth_bytes_per_second{{{N}}}", "{{peer}} {{rail}} {{kind}}")], w=8, unit="Bps")

    L.row("Cluster, rail $rail")
    L.panel("table", "Path matrix: latest probe per prober and target (1 = up)", [
        ('rocewatch:path:up{rail=~"$rail"}', "")], w=24, h=10, instant=True,
        description="One row per prober, target and rail: what the shipped rules see.",
        transformations=[{"id": "groupingToMatrix", "options": {
            "columnField": "target_instance", "rowField": "instance", "valueField": "Value"}}])
    L.panel("bargauge", "Reached by its probers, per node", [
        ('rocewatch:node_rail:reached_by:ratio{rail=~"$rail"}', "{{instance}} {{rail}}")], unit="percentunit",
        description="Below 50% with at least two probers: RocewatchNodeRailDown.")
    L.panel("bargauge", "Reaches its peers, per node", [
        ('rocewatch:node_rail:reaches:ratio{rail=~"$rail"}', "{{instance}} {{rail}}")], unit="percentunit",
        description="Below 50% while others reach them: RocewatchNodeRailCannotReachPeers.")
    L.panel("timeseries", "Latency per node against the rail's median", [
        ('rocewatch:node_rail:latency_p50_seconds{rail=~"$rail"}', "{{instance}} {{rail}} {{kind}}"),
        ('rocewatch:rail:latency_p50_seconds:median{rail=~"$rail"}', "median {{rail}} {{kind}}")], unit="s",
        description="A node over 3x its rail's median (and 200 us above it) is an outlier.")
    L.panel("timeseries", "Bandwidth per node against the rail's median", [
        ('rocewatch:node_rail:bandwidth_bytes_per_second{rail=~"$rail"}', "{{instance}} {{rail}} {{kind}}"),
        ('rocewatch:rail:bandwidth_bytes_per_second:median{rail=~"$rail"}', "median {{rail}} {{kind}}")],
        unit="Bps", description="A node under half its rail's median is an outlier.")
    L.panel("stat", "Working paths per rail", [('rocewatch:rail:paths_up:ratio{rail=~"$rail"}', "{{rail}}")],
            w=6, unit="percentunit")
    L.panel("table", "Firing rocewatch alerts (Prometheus)", [
        ('ALERTS{alertname=~"Rocewatch.*",alertstate="firing"}', "")], w=18, instant=True,
        description="The shipped rules' alerts; their annotations say who is at fault and what to check.")

    def var(name, label, query, multi):
        return {"name": name, "label": label, "type": "query", "datasource": DS,
                "query": {"query": query, "refId": name}, "definition": query, "refresh": 2,
                "includeAll": multi, "multi": multi, "allValue": ".*" if multi else None, "sort": 1,
                "current": {}, "options": []}

    return {
        "title": "rocewatch",
        "uid": "rocewatch",
        "description": "RDMA cluster health from rocewatchd and the shipped Prometheus rules.",
        "tags": ["rocewatch", "rdma"],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus",
             "current": {}, "options": []},
            var("instance", "Node", "label_values(rocewatch_health_status, instance)", False),
            var("rail", "Rail", "label_values(rocewatch_probe_success, rail)", True),
        ]},
        "annotations": {"list": []},
        "panels": L.panels,
    }


def queries(d):
    for p in d["panels"]:
        for t in p.get("targets", []):
            yield {"panel": p["title"], "expr": t["expr"]}


def main():
    d = dashboard()
    text = json.dumps(d, indent=2, sort_keys=True) + "\n"
    if "--queries" in sys.argv:
        for q in queries(d):
            print(json.dumps(q))
        return
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
