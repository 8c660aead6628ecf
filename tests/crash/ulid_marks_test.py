#!/usr/bin/python3
"""A ULID sequence's durable mark against the real binary (issue 30.1): every ULID a server
hands out sorts after every one handed out before it on the same data, across
- a kill -9 under load, then a restart with the clock where it was (wait policy: the restart
  waits out the mark's margin, it never issues below it) or stepped back 30 s (logical policy:
  IDs resume above the mark, ahead of the clock; wait policy: refused, never lower);
- a clean stop, after which the restart answers at once (the mark came down to the newest ID);
- a backup restored and started with the clock 60 s behind (the restore raised the mark by the
  backup's age);
and SELECT NEXTVAL(seq) answers the sequence's ULIDs as text over the text protocol (PyMySQL)
and the binary one (Node mysql2's execute)."""
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from faked_clock import LIBFAKETIME, preload  # noqa: E402
from ticketd_process import BINARY, Ticketd  # noqa: E402

import pymysql  # noqa: E402


CONFIG = """
data_dir: {data_dir}
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: app, password: s3cret-app }}
http:
  listen: 127.0.0.1:{http_port}
snowflake:
  clock: {{ policy: POLICY, max_backward_ms: 5 }}
sequences:
  - {{ name: Events, kind: ulid }}
"""


def next_ids(port, count):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("POST", "/v1/sequences/Events/next", body=json.dumps({"count": count}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, json.loads(r.read())
    finally:
        c.close()


class UlidMarks(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.path.exists(LIBFAKETIME), "faketime is installed by scripts/setup")
        self.tmp = tempfile.mkdtemp(prefix="ticketd-ulid-marks-")
        self.clock_path = os.path.join(self.tmp, "faketime")
        self.daemons = []

    def tearDown(self):
        for t in self.daemons:
            t.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def set_offset(self, seconds):
        with open(self.clock_path + ".tmp", "w") as f:
            f.write(f"{seconds:+.3f} x1\n")
        os.replace(self.clock_path + ".tmp", self.clock_path)

    def ticketd(self, policy, data_dir):
        asan = (os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")
        t = Ticketd(config=CONFIG.replace("POLICY", policy), data_dir=data_dir,
                    env={"LD_PRELOAD": preload(BINARY), "FAKETIME_TIMESTAMP_FILE": self.clock_path,
                         "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_NO_CACHE": "1",
                         "ASAN_OPTIONS": asan})
        self.daemons.append(t)
        return t.start()

    def take(self, t, count=500):
        status, body = next_ids(t.http_port, count)
        self.assertEqual(status, 200, body)
        return body["ids"]

    def take_within(self, t, seconds, count=100):
        """IDs once the server answers 200, retrying 503s (a restart waiting out its mark)
        until a deadline."""
        deadline = time.time() + seconds
        while True:
            status, body = next_ids(t.http_port, count)
            if status == 200:
                return body["ids"]
            self.assertEqual(status, 503, body)
            self.assertLess(time.time(), deadline, body)
            time.sleep(0.05)

    def load_then_kill(self, t):
        before = []
        for _ in range(20):
            before += self.take(t)
        t.kill9()
        return before

    def test_kill9_then_restart_waits_out_the_mark_never_below_it(self):
        self.set_offset(0)
        data = os.path.join(self.tmp, "data")
        before = self.load_then_kill(self.ticketd("wait", data))
        t = self.ticketd("wait", data)
        # Bounded by the mark's margin (2 s) plus the retry queue's second.
        after = self.take_within(t, 10)
        after += self.take(t)
        self.assertGreater(after[0], before[-1])
        self.assertEqual(after, sorted(after))

    def test_kill9_then_a_clock_30s_behind(self):
        self.set_offset(0)
        data = os.path.join(self.tmp, "data")
        before = self.load_then_kill(self.ticketd("logical", data))
        self.set_offset(-30)
        t = self.ticketd("logical", data)
        after = self.take(t)
        self.assertGreater(after[0], before[-1], "logical: resumes above the mark")
        t.kill9()
        # The same clock under `wait`: the logical run's mark is 30 s ahead of this clock, so
        # the wait is answered at once (503 retry_later), never with an ID below the mark.
        t = self.ticketd("wait", data)
        status, body = next_ids(t.http_port, 1)
        self.assertEqual(status, 503, body)
        self.assertEqual(body["error"]["code"], "retry_later", body)
        # Its clock back 40 s more, behind that run's own last reading: a regression, refused.
        t.kill9()
        self.set_offset(-70)
        t = self.ticketd("wait", data)
        status, body = next_ids(t.http_port, 1)
        self.assertEqual(status, 503, body)
        self.assertIn("behind the previous run", body["error"]["message"])

    def test_a_clean_stop_lowers_the_mark_so_the_restart_answers_at_once(self):
        self.set_offset(0)
        data = os.path.join(self.tmp, "data")
        t = self.ticketd("wait", data)
        before = self.take(t)
        self.assertEqual(t.stop(), 0)
        # `ticketd verify` reads the mark (every kind checks its own keys).
        v = subprocess.run([BINARY, "verify", "--data-dir", data], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)
        self.assertRegex(v.stdout, r"ulid +Events +mark \d{4}-")
        self.assertIn("1 ulid sequences, 0 violations", v.stdout)
        t = self.ticketd("wait", data)
        after = self.take(t)  # 200 at once: no margin to wait out
        self.assertGreater(after[0], before[-1])

    def test_a_restored_backup_resumes_above_every_id_issued_before(self):
        self.set_offset(0)
        data = os.path.join(self.tmp, "data")
        t = self.ticketd("logical", data)
        before = self.take(t)
        self.assertEqual(t.stop(), 0)
        backup = os.path.join(self.tmp, "backup")
        r = subprocess.run([BINARY, "backup", "--data-dir", data, "--to", backup],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        manifest = json.load(open(os.path.join(backup, "ticketd-backup.json")))
        entry = next(s for s in manifest["sequences"] if s["name"] == "Events")
        self.assertEqual(entry["kind"], "ulid")
        self.assertIn("mark_unix_ms", entry)
        # The old server went on issuing after the backup, then the backup was restored.
        t = self.ticketd("logical", data)
        before += self.take(t)
        restored = os.path.join(self.tmp, "restored")
        r = subprocess.run([BINARY, "restore", "--from", backup, "--data-dir", restored],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("ulid_mark_raised", r.stdout + r.stderr)
        t.kill9()
        self.set_offset(-60)
        after = self.take(self.ticketd("logical", restored))
        self.assertGreater(after[0], max(before))

    def test_nextval_answers_ulids_as_text_over_both_protocols(self):
        self.set_offset(0)
        t = self.ticketd("wait", os.path.join(self.tmp, "data"))
        conn = pymysql.connect(host="127.0.0.1", port=t.mysql_port, user="app",
                               password="s3cret-app", database="tickets")
        self.addCleanup(conn.close)
        with conn.cursor() as cur:
            cur.execute("SELECT NEXTVAL(Events)")
            first = cur.fetchone()[0]
            self.assertIsInstance(first, str)
            self.assertEqual(len(first), 26)
            cur.execute("SELECT NEXTVAL(Events), NEXTVAL(Events)")
            a, b = cur.fetchone()
            self.assertLess(first, a)
            self.assertLess(a, b)
        script = ("const m=require('mysql2/promise');(async()=>{const c=await m.createConnection("
                  f"{{host:'127.0.0.1',port:{t.mysql_port},user:'app',password:'s3cret-app',"
                  "database:'tickets'});const out=[];for(let i=0;i<3;i++){const [r]=await "
                  "c.execute('SELECT NEXTVAL(Events) AS id');out.push(r[0].id);}"
                  "console.log(JSON.stringify(out));await c.end();})().catch(e=>{"
                  "console.error(e);process.exit(1);});")
        r = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=60,
                           cwd=os.path.join(ROOT, "tests", "clients"))
        self.assertEqual(r.returncode, 0, r.stderr)
        ids = json.loads(r.stdout)
        self.assertEqual(len(ids), 3)
        self.assertTrue(all(isinstance(i, str) and len(i) == 26 for i in ids), ids)
        self.assertEqual(ids, sorted(ids))
        self.assertGreater(ids[0], b)


if __name__ == "__main__":
    unittest.main(verbosity=2)
