"""scripts/hilo_client.py against a real ticketd: the double buffer leases the next block when
the current one is 80 % used, hands out each block's values in order, and several clients (and
several threads on one client) get disjoint IDs. The server's lease listing is the witness of
what the client asked for."""
import http.client
import json
import os
import subprocess
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "hilo_client.py")
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from ticketd_process import Ticketd  # noqa: E402
from hilo_client import HiLoClient, HiLoError  # noqa: E402


class HiLoClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Ticketd().start()
        cls.url = f"http://127.0.0.1:{cls.d.http_port}"

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def leases_of(self, holder, sequence="Tickets64"):
        """The server's record of `holder`'s leases, oldest first, as (first, last, step)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.d.http_port, timeout=10)
        try:
            conn.request("GET", f"/v1/sequences/{sequence}/blocks?limit=1000")
            resp = conn.getresponse()
            listing = json.loads(resp.read())
        finally:
            conn.close()
        self.assertEqual(resp.status, 200, listing)
        self.assertLess(len(listing["leases"]), 1000, "listing truncated; the test needs all")
        mine = [lease for lease in reversed(listing["leases"]) if lease["holder"] == holder]
        return [(int(lease["first"]), int(lease["last"]), lease["step"]) for lease in mine]

    def test_prefetches_the_next_block_when_80_percent_is_used(self):
        c = HiLoClient(self.url, "Tickets64", block_size=100, holder="prefetch-80")
        try:
            c.await_prefetch()  # the first lease starts in the constructor
            self.assertEqual(c.blocks_requested, 1)
            [(first1, last1, _)] = self.leases_of("prefetch-80")
            self.assertEqual(last1 - first1, 99)

            ids = [c.next_id() for _ in range(79)]
            self.assertEqual(c.blocks_requested, 1, "leased before 80 % was used")
            self.assertEqual(len(self.leases_of("prefetch-80")), 1)

            ids.append(c.next_id())  # the 80th value of 100
            self.assertEqual(c.blocks_requested, 2, "did not lease at 80 %")
            c.await_prefetch()
            leases = self.leases_of("prefetch-80")
            self.assertEqual(len(leases), 2)
            first2, last2, _ = leases[1]
            self.assertGreater(first2, last1)

            ids += [c.next_id() for _ in range(20)]
            self.assertEqual(ids, list(range(first1, last1 + 1)), "not the first block, in order")
            self.assertEqual(c.next_id(), first2, "did not switch to the prefetched block")
            self.assertEqual(c.blocks_requested, 2, "leased again instead of using the buffer")
            self.assertEqual(c.stalls, 0, "waited although the next block was there")

            for _ in range(78):
                c.next_id()
            self.assertEqual(c.blocks_requested, 2)
            self.assertEqual(c.next_id(), first2 + 79)
            self.assertEqual(c.blocks_requested, 3, "did not lease at 80 % of the second block")
        finally:
            c.close()
        self.assertEqual(len(self.leases_of("prefetch-80")), 3)

    def test_many_blocks_unique_increasing_and_inside_the_leases(self):
        with HiLoClient(self.url, "Tickets64", block_size=50, holder="many-blocks") as c:
            ids = [c.next_id() for _ in range(5000)]
        self.assertEqual(ids, sorted(set(ids)), "not unique and increasing")
        # One lease at start, then one when values 40, 90, ..., 4990 were handed out.
        self.assertEqual(c.blocks_requested, 101)
        leases = self.leases_of("many-blocks")
        self.assertEqual(len(leases), 101)
        expected = [v for first, last, step in leases for v in range(first, last + 1, step)]
        self.assertEqual(ids, expected[:5000])

    def test_follows_the_step_of_the_sequence(self):
        with HiLoClient(self.url, "Tickets32", block_size=10, holder="odd") as c:
            ids = [c.next_id() for _ in range(35)]
        self.assertTrue(all(v % 2 == 1 for v in ids), ids)
        self.assertEqual(ids, sorted(set(ids)))
        leases = self.leases_of("odd", "Tickets32")
        self.assertEqual([step for _, _, step in leases], [2] * len(leases))
        expected = [v for first, last, step in leases for v in range(first, last + 1, step)]
        self.assertEqual(ids, expected[:35])

    def test_parallel_clients_and_threads_get_disjoint_ids(self):
        clients = [HiLoClient(self.url, "Tickets64", block_size=100, holder=f"parallel-{k}")
                   for k in range(4)]
        got = {}  # (client, thread) -> ids in the order that thread received them
        start = threading.Barrier(8)

        def take(k, t):
            start.wait()
            got[(k, t)] = [clients[k].next_id() for _ in range(1500)]

        threads = [threading.Thread(target=take, args=(k, t)) for k in range(4) for t in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for c in clients:
            c.close()
        everything = [v for ids in got.values() for v in ids]
        self.assertEqual(len(everything), 8 * 1500)
        self.assertEqual(len(set(everything)), len(everything), "an ID was handed out twice")
        for key, ids in got.items():
            self.assertEqual(ids, sorted(ids), f"client/thread {key} went backwards")
        all_leases = []
        for k in range(4):
            leases = self.leases_of(f"parallel-{k}")
            self.assertEqual(len(leases), clients[k].blocks_requested)
            all_leases += leases
            mine = {v for first, last, step in leases for v in range(first, last + 1, step)}
            taken = set(got[(k, 0)] + got[(k, 1)])
            self.assertLessEqual(taken, mine, f"client {k} handed out values it never leased")
        all_leases.sort()
        for a, b in zip(all_leases, all_leases[1:]):
            self.assertGreater(b[0], a[1], f"leases {a} and {b} overlap")

    def test_a_refused_lease_is_an_error_and_the_next_call_retries(self):
        c = HiLoClient(self.url, "NoSuchSequence", block_size=10, holder="refused")
        try:
            with self.assertRaisesRegex(HiLoError, "sequence 'NoSuchSequence' does not exist"):
                c.next_id()
            with self.assertRaisesRegex(HiLoError, "does not exist"):
                c.next_id()
            self.assertEqual(c.blocks_requested, 2)
        finally:
            c.close()

    def test_command_line_prints_n_ids(self):
        out = subprocess.run(
            [sys.executable, SCRIPT, "--url", self.url, "--block-size", "100", "--holder", "cli",
             "-n", "250", "--stats"],
            capture_output=True, text=True, timeout=60, check=True)
        ids = [int(line) for line in out.stdout.splitlines()]
        self.assertEqual(len(ids), 250)
        self.assertEqual(ids, sorted(set(ids)))
        self.assertIn("250 ids, 3 leases", out.stderr)
        leases = self.leases_of("cli")
        self.assertEqual(len(leases), 3)  # at start, at the 80th and at the 180th value
        expected = [v for first, last, step in leases for v in range(first, last + 1, step)]
        self.assertEqual(ids, expected[:250])

    def test_command_line_reports_a_refusal(self):
        out = subprocess.run([sys.executable, SCRIPT, "--url", self.url, "--sequence", "Nope",
                              "-n", "1"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 1)
        self.assertEqual(out.stdout, "")
        self.assertIn("sequence 'Nope' does not exist", out.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
