#!/usr/bin/python3
"""kill -9 under gapless load, 20 times. 8 MySQL and 8 HTTP clients reserve and then commit,
void, roll back, release or abandon numbers while ticketd is killed at a random moment. After
each kill `ticketd verify` must pass on the data dir, and after each restart every commit a
client saw acknowledged must still be committed, no number acknowledged twice, no hole. At the
end, once everything is settled, the committed numbers are exactly {1 … N}."""
import os
import random
import subprocess
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, HERE)
from ticketd_process import Ticketd  # noqa: E402
from gapless_test import Http, audit, committed_set, mysql, scalar, settle  # noqa: E402

import pymysql  # noqa: E402

CONFIG = """
data_dir: {data_dir}
mysql:
  listen: 127.0.0.1:{mysql_port}
  users:
    - {{ name: app, password: s3cret-app }}
http:
  listen: 127.0.0.1:{http_port}
sequences:
  - {{ name: Invoices, kind: gapless, reservation_ttl_ms: 800 }}
"""

CYCLES = int(os.environ.get("GAPLESS_CRASH_CYCLES", "20"))


class GaplessCrash(unittest.TestCase):
    def test_kill9_under_load(self):
        t = Ticketd(config=CONFIG)
        acknowledged = []
        lock = threading.Lock()
        rng = random.Random(2026)
        try:
            t.start()
            for cycle in range(CYCLES):
                stop = threading.Event()
                failures = []

                def ack(n):
                    with lock:
                        acknowledged.append(n)

                def mysql_client(seed):
                    r = random.Random(seed)
                    try:
                        c = mysql(t)
                        cur = c.cursor()
                        while not stop.is_set():
                            if r.random() < 0.3:
                                cur.execute("REPLACE INTO Invoices (stub) VALUES ('a')")
                                ack(scalar(cur, "SELECT LAST_INSERT_ID()"))  # autocommit
                                continue
                            cur.execute("BEGIN")
                            n = scalar(cur, "SELECT NEXTVAL(Invoices)")
                            if r.random() < 0.7:
                                try:
                                    cur.execute("COMMIT")
                                except pymysql.err.OperationalError as e:
                                    if e.args[0] != 1180:
                                        raise
                                    continue  # expired: released, not committed
                                ack(n)
                            else:
                                cur.execute("ROLLBACK")
                    except (pymysql.err.OperationalError, pymysql.err.InterfaceError,
                            ConnectionError, OSError):
                        pass  # the server was killed
                    except Exception as e:  # noqa: BLE001
                        failures.append(repr(e))

                def http_client(seed):
                    r = random.Random(seed)
                    try:
                        h = Http(t.http_port)
                        while not stop.is_set():
                            status, res = h.call("POST", "/v1/sequences/Invoices/reservations",
                                                 {"holder": f"c{seed}"})
                            if status != 201:
                                failures.append(f"reserve answered {status} {res}")
                                return
                            rid = res["reservation_id"]
                            x = r.random()
                            if x < 0.6:
                                status, _ = h.call(
                                    "POST", f"/v1/sequences/Invoices/reservations/{rid}/commit")
                            elif x < 0.7:
                                status, _ = h.call(
                                    "POST", f"/v1/sequences/Invoices/reservations/{rid}/void",
                                    {"reason": "cancelled"})
                            elif x < 0.9:
                                h.call("DELETE", f"/v1/sequences/Invoices/reservations/{rid}")
                                continue
                            else:
                                continue  # abandoned: its TTL releases it
                            if status == 200:
                                ack(int(res["id"]))
                            elif status != 409:
                                failures.append(f"commit answered {status}")
                                return
                    except (ConnectionError, OSError, ValueError):
                        pass  # the server was killed (ValueError: a cut-off JSON body)
                    except Exception as e:  # noqa: BLE001
                        failures.append(repr(e))

                threads = [threading.Thread(target=mysql_client, args=(cycle * 100 + i,))
                           for i in range(8)]
                threads += [threading.Thread(target=http_client, args=(cycle * 100 + 50 + i,))
                            for i in range(8)]
                for th in threads:
                    th.start()
                time.sleep(rng.uniform(0.3, 1.2))
                t.kill9()
                stop.set()
                for th in threads:
                    th.join(30)
                self.assertEqual(failures, [], f"cycle {cycle}")

                out = subprocess.run([t.binary, "verify", "--data-dir", t.data_dir],
                                     capture_output=True, text=True, timeout=60)
                self.assertEqual(out.returncode, 0, f"cycle {cycle}: verify\n{out.stdout}")

                t.start()
                a = audit(t, "Invoices")
                self.assertEqual(a["holes"], [], f"cycle {cycle}")
                committed = committed_set(a, 1)
                self.assertEqual(len(committed), a["committed"], f"cycle {cycle}")
                missing = set(acknowledged) - committed
                self.assertEqual(missing, set(), f"cycle {cycle}: acknowledged commits lost")
                self.assertEqual(len(acknowledged), len(set(acknowledged)),
                                 f"cycle {cycle}: a number was acknowledged twice")

            a, taken = settle(t, "Invoices", 1)
            n = int(a["committed_through"])
            self.assertEqual(a["committed"], n)
            self.assertEqual(int(a["high"]), n)
            self.assertTrue(set(acknowledged) | taken <= set(range(1, n + 1)))
            self.assertEqual(set(acknowledged) & taken, set())
            self.assertGreater(len(acknowledged), 100 * CYCLES // 20)
            print(f"{CYCLES} kill -9 cycles: {len(acknowledged)} acknowledged commits, all kept; "
                  f"committed = 1..{n} after settling ({len(taken)} released numbers reused)")
        finally:
            t.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
