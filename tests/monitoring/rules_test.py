#!/usr/bin/python3
"""The alerting rules load (promtool check rules) and behave as their unit tests say (promtool
test rules: every alert firing and not firing). promtool comes with Debian's prometheus."""
import os
import shutil
import subprocess
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RULES_DIR = os.path.join(HERE, "..", "..", "monitoring", "prometheus")
PROMTOOL = os.environ.get("PROMTOOL", shutil.which("promtool") or "/usr/bin/promtool")


def promtool(*args):
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120,
                          cwd=RULES_DIR)


class Rules(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.path.exists(PROMTOOL),
                        "promtool is missing: scripts/setup installs Debian's prometheus")

    def test_rules_load(self):
        r = promtool("check", "rules", "ticketd-rules.yml")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS", r.stdout + r.stderr)

    def test_rule_unit_tests_pass(self):
        r = promtool("test", "rules", "ticketd-rules.test.yml")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS", r.stdout + r.stderr)

    def test_every_alert_has_a_unit_test(self):
        import yaml
        with open(os.path.join(RULES_DIR, "ticketd-rules.yml")) as f:
            alerts = {r["alert"] for g in yaml.safe_load(f)["groups"] for r in g["rules"]
                      if "alert" in r}
        with open(os.path.join(RULES_DIR, "ticketd-rules.test.yml")) as f:
            tests = yaml.safe_load(f)["tests"]
        firing, quiet = set(), set()
        for t in tests:
            for case in t.get("alert_rule_test", []):
                (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
        self.assertEqual(alerts - firing, set(), "alerts without a firing case")
        self.assertEqual(alerts - quiet, set(), "alerts without a not-firing case")


if __name__ == "__main__":
    unittest.main(verbosity=2)
