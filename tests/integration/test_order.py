"""Order-driven prefetch through a real mount: `warmfs prefetch MNT --order FILE` publishes a
shuffled order through MNT/.warmfs/order and returns; the daemon fetches ahead in that order
(seen in its stats before anyone reads); readers in several threads then read the files in the
order, byte-exact, and the bucket served each file once (GETs counted through the stats). The
order's epoch carries its numbers (`warmfs stats --epochs`). A new order replaces the old one;
a bad order is one clear error; a mount the kernel holds read-only takes orders through the
order file's ioctl channel (from the CLI and the Python helper). The order's
counters and the epochs' numbers reach Prometheus (--metrics-listen), passing promtool.

On s3rver (fast small GETs), with the bytes checked against what boto3 put.
"""

import errno
import fcntl
import hashlib
import json
import os
import random
import subprocess
import sys
import threading
import time
import unittest

import harness
from harness import KiB
from prometheus import require_promtool, scrape

S3RVER: harness.S3rver

COUNT = 300
SIZE = 16 * KiB


def setUpModule():
    harness.require("warmfs", "fuse", "s3rver")
    global S3RVER
    S3RVER = harness.start_server(unittest.addModuleCleanup, harness.S3rver())


def wait_for(what, cond, timeout=30.0, interval=0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class Order(harness.WarmfsTestCase):
    timeout = 120.0

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        c = S3RVER.client()
        harness.create_bucket(c, "order")
        cls.objects = {f"ds/s{i:04d}.bin": harness.make_data(SIZE, seed=i) for i in range(COUNT)}
        cls.objects.update({f"ds2/t{i:04d}.bin": harness.make_data(SIZE, seed=1000 + i)
                            for i in range(40)})
        harness.put_many(c, "order", cls.objects)
        cls.digests = {k: hashlib.sha256(v).hexdigest() for k, v in cls.objects.items()}

    def write_order(self, m, lines, name="order.txt"):
        path = m.tmp / name
        path.write_text("".join(line + "\n" for line in lines))
        return path

    def publish(self, m, path):
        return harness.run_cli(["prefetch", str(m.path), "--order", str(path)], m.env, timeout=30)

    def test_shuffled_order_read_by_threads(self):
        m = self.mount(S3RVER, "s3://order")
        names = [k for k in self.objects if k.startswith("ds/")]
        random.Random(19).shuffle(names)
        run = self.publish(m, self.write_order(m, names))
        self.assertEqual(run.rc, 0, run.describe())
        self.assertIn(f"published an order of {COUNT} entries", run.stdout)
        # Nobody reads yet: the daemon fetches the first entries of the order on its own.
        s = wait_for("the order to be prefetched", lambda: (
            st := m.stats())["order"]["fetched"] >= 100 and st)
        self.assertGreaterEqual(s["bucket_requests"]["get"], 100, s)
        self.assertEqual(s["order"]["entries"], COUNT, s)
        self.assertEqual(s["order"]["read"], 0, s)
        # Eight readers take the entries in order.
        nxt = iter(range(COUNT))
        lock = threading.Lock()
        errors = []

        def reader():
            while True:
                with lock:
                    i = next(nxt, None)
                if i is None:
                    return
                data = (m.path / names[i]).read_bytes()
                if hashlib.sha256(data).hexdigest() != self.digests[names[i]]:
                    errors.append(f"{names[i]}: wrong bytes ({len(data)} bytes)")

        threads = [threading.Thread(target=reader) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [], m.log_tail())
        s = m.stats()
        self.assertEqual(s["order"]["read"], COUNT, s["order"])
        self.assertEqual(s["order"]["head"], COUNT, s["order"])
        # Every file came from the bucket once, by the prefetcher or (late) by its reader.
        self.assertEqual(s["bucket_requests"]["get"], COUNT, s)
        self.assertEqual(s["bucket_bytes_read"], COUNT * SIZE, s)
        self.assertGreaterEqual(s["order"]["fetched_entries"], COUNT // 2, s["order"])
        # The order's epoch: its samples, the bytes it pulled.
        order_epochs = [e for e in s["epochs"] if e["kind"] == "order"]
        self.assertEqual(len(order_epochs), 1, s["epochs"])
        e = order_epochs[0]
        self.assertEqual(e["samples"], COUNT, e)
        self.assertEqual(e["bucket_gets"], COUNT, e)
        self.assertEqual(e["bucket_bytes"], COUNT * SIZE, e)
        self.assertGreater(e["samples_per_second"], 0, e)
        run = harness.run_cli(["stats", str(m.path), "--epochs"], m.env)
        self.assertEqual(run.rc, 0, run.describe())
        self.assertIn("order 1", run.stdout, run.stdout)
        run = harness.run_cli(["stats", str(m.path), "--epochs", "--json"], m.env)
        self.assertEqual(run.rc, 0, run.describe())
        self.assertEqual([x["kind"] for x in json.loads(run.stdout)],
                         [x["kind"] for x in s["epochs"]])
        # A second order replaces it; its files are fetched, those of the first are not again.
        second = sorted(k for k in self.objects if k.startswith("ds2/"))
        run = self.publish(m, self.write_order(m, second, "second.txt"))
        self.assertEqual(run.rc, 0, run.describe())
        s2 = wait_for("the second order to be prefetched", lambda: (
            st := m.stats())["order"]["fetched"] == len(second) and st)
        self.assertEqual(s2["order"]["orders"], 2, s2["order"])
        self.assertEqual(s2["bucket_requests"]["get"], COUNT + len(second), s2)

    def test_ranges_and_a_bad_order(self):
        m = self.mount(S3RVER, "s3://order")
        ranges = [f"ds/s{i:04d}.bin {off} 1000" for i in range(10) for off in (0, 8 * KiB)]
        run = self.publish(m, self.write_order(m, ranges))
        self.assertEqual(run.rc, 0, run.describe())
        wait_for("the ranges to be prefetched", lambda: m.stats()["order"]["fetched"] == 20)
        with self.subTest(what="a bad line"):
            run = self.publish(m, self.write_order(m, ["ds/s0001.bin", "../x"], "bad.txt"))
            self.assertEqual(run.rc, 1, run.describe())
            self.assertIn("line 3", run.stderr)  # counting the header added in front
            self.assertEqual(len(run.stderr.strip().splitlines()), 1, run.stderr)
            self.assertEqual(m.stats()["order"]["orders"], 1)
        with self.subTest(what="a missing file"):
            run = self.publish(m, m.tmp / "no-such-order.txt")
            self.assertEqual(run.rc, 1, run.describe())
            self.assertIn("no-such-order.txt", run.stderr)
        with self.subTest(what="usage"):
            run = harness.run_cli(["prefetch", str(m.path)], m.env)
            self.assertEqual(run.rc, 2, run.describe())
        with self.subTest(what="the control directory is not listed"):
            self.assertNotIn(".warmfs", [p.name for p in m.path.iterdir()])
            self.assertTrue((m.path / ".warmfs" / "order").exists())

    def test_metrics(self):
        require_promtool()
        port = harness.free_port()
        m = self.mount(S3RVER, "s3://order", args=["--metrics-listen", f"127.0.0.1:{port}"])
        names = sorted(k for k in self.objects if k.startswith("ds2/"))
        run = self.publish(m, self.write_order(m, names))
        self.assertEqual(run.rc, 0, run.describe())
        for n in names:
            (m.path / n).read_bytes()
        # Fetches ahead of the readers may still be running: the counters settle once they end.
        s = wait_for("the order's fetches to end", lambda: (
            st := m.stats())["order"]["requests_inflight"] == 0 and st)
        sc = scrape(self, port)
        self.assertEqual(sc.get("warmfs_orders_published_total"), 1)
        self.assertEqual(sc.get("warmfs_order_entries_total", state="read"), len(names))
        self.assertEqual(sc.get("warmfs_order_entries_total", state="prefetched"),
                         s["order"]["fetched_entries"])
        # The running epoch is the order's (the one before it, the mount's first interval).
        order_epoch = [e for e in s["epochs"] if e["kind"] == "order"][0]
        self.assertEqual(sc.get("warmfs_epoch_number", epoch="running"), order_epoch["epoch"])
        self.assertEqual(sc.get("warmfs_epoch_bucket_bytes", epoch="running"), len(names) * SIZE)
        self.assertEqual(sc.get("warmfs_epoch_number", epoch="last"), order_epoch["epoch"] - 1)
        self.assertGreater(sc.get("warmfs_epoch_samples_per_second", epoch="running"), 0)
        self.assertGreaterEqual(sc.get("warmfs_epoch_hit_ratio", epoch="running", tier="local"), 0)

    def test_read_only_mount_takes_orders_by_ioctl(self):
        m = self.mount(S3RVER, "s3://order", args=["--read-only"])
        control = m.path / ".warmfs" / "order"
        with self.assertRaises(OSError) as cm:
            open(control, "w").close()
        self.assertEqual(cm.exception.errno, errno.EROFS)
        # warmfs prefetch goes through the ioctl channel instead.
        names = sorted(k for k in self.objects if k.startswith("ds2/"))
        run = self.publish(m, self.write_order(m, names))
        self.assertEqual(run.rc, 0, run.describe())
        self.assertIn(f"published an order of {len(names)} entries", run.stdout)
        wait_for("the order to be prefetched", lambda: m.stats()["order"]["fetched"] == len(names))
        for n in names:
            self.assertEqual(hashlib.sha256((m.path / n).read_bytes()).hexdigest(),
                             self.digests[n], n)
        # The Python helper too, with an order of several ioctl pieces (over 16 KiB of text).
        ranges = [[f"ds/s{i:04d}.bin", off, 1000] for i in range(COUNT) for off in (0, 8 * KiB)]
        env = dict(m.env, PYTHONPATH=str(harness.REPO / "python"))
        code = ("import json, sys, warmfs\n"
                "entries = [tuple(e) for e in json.loads(sys.stdin.read())]\n"
                "print(warmfs.publish_order(sys.argv[1], entries))\n")
        py = subprocess.run([sys.executable, "-c", code, str(m.path)], input=json.dumps(ranges),
                            capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(py.returncode, 0, py.stderr)
        self.assertEqual(py.stdout.strip(), str(len(ranges)))
        s = wait_for("the helper's order", lambda: (st := m.stats())["order"]["orders"] == 2 and st)
        self.assertEqual(s["order"]["entries"], len(ranges), s["order"])
        # A bad order is refused (EINVAL); the order before stays.
        run = self.publish(m, self.write_order(m, ["ds/s0001.bin", "../x"], "bad.txt"))
        self.assertEqual(run.rc, 1, run.describe())
        bad = "warmfs-order 1\nds/s0001.bin 0 -5\n"
        code = ("import sys, warmfs, errno\n"
                "try:\n"
                "    warmfs._publish_by_ioctl(sys.argv[1], sys.argv[2].encode())\n"
                "except OSError as e:\n"
                "    print(errno.errorcode[e.errno])\n")
        py = subprocess.run([sys.executable, "-c", code, str(control), bad], capture_output=True,
                            text=True, env=env, timeout=60)
        self.assertEqual(py.stdout.strip(), "EINVAL", py.stdout + py.stderr)
        self.assertEqual(m.stats()["order"]["orders"], 2)
        # Other files answer no ioctl.
        fd = os.open(m.path / names[0], os.O_RDONLY)
        try:
            with self.assertRaises(OSError) as cm:
                fcntl.ioctl(fd, 0x5702)
            self.assertEqual(cm.exception.errno, errno.ENOTTY)
        finally:
            os.close(fd)


if __name__ == "__main__":
    unittest.main()
