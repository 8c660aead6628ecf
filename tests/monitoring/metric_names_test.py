#!/usr/bin/python3
"""Every metric name the Grafana dashboard and the alerting rules read is one that a running
ticketd exports. Starts a real etcd and two real ticketd processes: one on RocksDB with a
sequence of every kind, a worker-ID pool and its Snowflake worker ID leased from etcd; one on
storage.engine etcd for the HA series (a ticket and a gapless sequence). Makes traffic
so that the labelled series exist (tickets, a block lease, a gapless reservation, Snowflake
IDs, UUIDv7s, a worker lease, an error), scrapes both /metrics and compares against the union.
The only name allowed from outside ticketd is Prometheus' own `up`."""
import http.client
import json
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, HERE)
from ticketd_process import Ticketd  # noqa: E402
from etcd_process import Etcd  # noqa: E402
from promql_names import dashboard_exprs, exported_names, metric_names, rule_exprs  # noqa: E402

MONITORING = os.path.join(HERE, "..", "..", "monitoring")
DASHBOARD = os.path.join(MONITORING, "grafana", "ticketd.json")
RULES = os.path.join(MONITORING, "prometheus", "ticketd-rules.yml")
FROM_PROMETHEUS = {"up"}  # written by Prometheus for every target, not by ticketd

CONFIG = """
data_dir: {data_dir}
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: app, password: s3cret-app }}
http:
  listen: 127.0.0.1:{http_port}
  metrics_public: true
snowflake:
  worker_id:
    source: etcd
    endpoints: [ENDPOINT]
    prefix: /ticketd/monitoring-workers/
    ttl_s: 2
sequences:
  - {{ name: Tickets64, kind: ticket }}
  - {{ name: Invoices, kind: gapless }}
  - {{ name: Snowflake64, kind: snowflake }}
  - {{ name: EventIds, kind: uuidv7 }}
worker_pools:
  - {{ name: orders, worker_bits: 4 }}
"""

HA_CONFIG = """
storage:
  engine: etcd
  endpoints: [ENDPOINT]
  prefix: /ticketd/monitoring/
  leader_ttl_s: 2
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: app, password: s3cret-app }}
http:
  listen: 127.0.0.1:{http_port}
  metrics_public: true
sequences:
  - {{ name: Tickets64, kind: ticket }}
  - {{ name: Invoices, kind: gapless }}
"""


def call(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        c.request(method, path, json.dumps(body) if body is not None else None, headers)
        r = c.getresponse()
        return r.status, r.read().decode()
    finally:
        c.close()


class Parser(unittest.TestCase):
    """The name extractor itself, so that a blind parser cannot make the real check pass."""

    def test_strips_functions_labels_ranges_clauses_and_variables(self):
        cases = [
            ('sum by (sequence, frontend) (rate(ticketd_ids_issued_total{job=~"$job"}[$__rate_interval]))',
             {"ticketd_ids_issued_total"}),
            ('histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="rate(b)"}[5m])))', {"a_bucket"}),
            ("x / on (instance) group_left sum by (instance) (rate(y[1m] offset 1h))", {"x", "y"}),
            ("up == 0 or absent(up{job=\"t\"})", {"up"}),
            ("clamp_max(m, 3153600000) < 30 * 86400 and n > bool 1e18", {"m", "n"}),
            ("max without (pod) (g) unless ignoring(le) h", {"g", "h"}),
            ('label_values(ticketd_ids_issued_total{job=~"$job"}, instance)',
             {"ticketd_ids_issued_total"}),
        ]
        for expr, names in cases:
            self.assertEqual(metric_names(expr), names, expr)

    def test_exported_names_are_sample_names(self):
        text = ("# HELP a_total x\n# TYPE a_total counter\na_total{l=\"1\"} 3\n"
                "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 2\nh_count 1\n"
                "# TYPE empty gauge\n")
        self.assertEqual(exported_names(text), {"a_total", "h_bucket", "h_sum", "h_count"})

    def test_files_reference_metrics(self):
        dash = set().union(*(metric_names(e) for _, e in dashboard_exprs(DASHBOARD)))
        rules = set().union(*(metric_names(e) for _, e in rule_exprs(RULES)))
        # Guards against a parser that finds nothing (and so reports nothing missing).
        self.assertGreaterEqual(len(dash), 25, sorted(dash))
        self.assertGreaterEqual(len(rules), 7, sorted(rules))
        self.assertIn("ticketd_durable_write_duration_seconds_bucket", dash & rules)


class MetricNames(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.etcd = Etcd().start()
        cls.t = Ticketd(config=CONFIG.replace("ENDPOINT", cls.etcd.endpoint))
        cls.ha = Ticketd(config=HA_CONFIG.replace("ENDPOINT", cls.etcd.endpoint))
        try:
            cls.ha.start()
            cls.wait_leader(cls.ha)
            cls.t.start()
            cls.wait_leader(cls.t)
            cls.traffic()
            cls.metrics = cls.scrape_until_complete(cls.t)
            cls.ha_metrics = cls.scrape_until_complete(cls.ha)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.t.cleanup()
        cls.ha.cleanup()
        cls.etcd.cleanup()

    @staticmethod
    def wait_leader(t, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if call(t.http_port, "GET", "/readyz")[0] == 200:
                return
            time.sleep(0.05)
        raise RuntimeError("ticketd did not become ready:\n" + t.log_text())

    @classmethod
    def must(cls, expected, method, path, body=None, t=None):
        deadline = time.time() + 30
        while True:
            status, text = call((t or cls.t).http_port, method, path, body)
            if status == expected:
                return json.loads(text) if text else None
            # Snowflake IDs wait for the lease's mark right after start: retry briefly.
            if status != 503 or time.time() > deadline:
                raise AssertionError(f"{method} {path}: {status} {text}")
            time.sleep(0.05)

    @classmethod
    def traffic(cls):
        cls.must(200, "POST", "/v1/sequences/Tickets64/next", {"count": 5})
        cls.must(201, "POST", "/v1/sequences/Tickets64/blocks", {"size": 100, "holder": "billing-1"})
        cls.must(201, "POST", "/v1/sequences/Invoices/reservations", {"holder": "clerk"})
        cls.must(200, "POST", "/v1/sequences/Invoices/next", {})
        cls.must(200, "POST", "/v1/sequences/Snowflake64/next", {})
        cls.must(200, "POST", "/v1/sequences/EventIds/next", {"count": 3})
        cls.must(201, "POST", "/v1/workers/orders/leases", {"holder": "orders-1", "ttl_s": 60})
        cls.must(404, "GET", "/v1/sequences/NoSuchSequence")
        cls.must(200, "POST", "/v1/sequences/Tickets64/next", {"count": 5}, t=cls.ha)

    @staticmethod
    def scrape(t):
        status, text = call(t.http_port, "GET", "/metrics")
        if status != 200:
            raise AssertionError(f"/metrics: {status} {text}")
        return text

    @classmethod
    def scrape_until_complete(cls, t):
        """Counters fed at scrape time (the Snowflake rates) need a second scrape a second
        later to have moved; everything else is there at once."""
        cls.scrape(t)
        time.sleep(1.1)
        return cls.scrape(t)

    def check(self, exprs):
        exported = (exported_names(self.metrics) | exported_names(self.ha_metrics)
                    | FROM_PROMETHEUS)
        missing = {}
        for where, expr in exprs:
            for name in metric_names(expr) - exported:
                missing.setdefault(name, []).append(where)
        self.assertEqual(missing, {}, "not exported by ticketd (name: where it is used)")

    def test_dashboard_reads_only_exported_metrics(self):
        self.check(dashboard_exprs(DASHBOARD))

    def test_rules_read_only_exported_metrics(self):
        self.check(rule_exprs(RULES))

    def test_a_wrong_name_is_reported(self):
        with self.assertRaises(AssertionError):
            self.check([("test", 'rate(ticketd_ids_issued_totl{job="ticketd"}[5m])')])
        with self.assertRaises(AssertionError):  # a histogram read without its suffix
            self.check([("test", "rate(ticketd_durable_write_duration_seconds[5m])")])

    def test_the_new_series_carry_their_labels(self):
        for line in ['ticketd_gapless_pending_reservations{sequence="Invoices"} 1',
                     'ticketd_worker_pool_leases{pool="orders"} 1',
                     'ticketd_worker_pool_size{pool="orders"} 16',
                     'ticketd_snowflake_worker_lease_valid{sequence="Snowflake64"} 1']:
            self.assertIn(line, self.metrics)
        self.assertNotIn("\nticketd_ha_serving ", self.metrics)  # RocksDB: no election
        for line in ['ticketd_ha_role{role="leader"} 1', "ticketd_ha_serving 1"]:
            self.assertIn(line, self.ha_metrics)
        for text in (self.metrics, self.ha_metrics):
            self.assertRegex(text, r"\nticketd_durable_write_duration_seconds_count [1-9]")
            self.assertRegex(text, r"\nticketd_durable_write_group_size_count [1-9]")
        self.assertRegex(self.ha_metrics, r"\nticketd_ha_term [1-9]")


if __name__ == "__main__":
    unittest.main(verbosity=2)
