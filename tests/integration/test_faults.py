"""Reads through tools/s3proxy, which injects object-store faults and latency between warmfs and
the S3 server: 500 InternalError and 503 SlowDown, connection resets and bodies cut short (all
retried: bytes stay exact), an object that always fails (EIO within a bound, other objects fine,
then correct once the fault is cleared), a server that stalls mid-body (shorter and longer than
warmfs's low-speed limit), first-byte latency, and a mount check that meets only 500s.

Each test starts its own proxy (stopped by PID in cleanup) and mounts with --endpoint at it; the
proxy's control port changes faults at run time and counts what it injected, so every test
also checks that its faults happened. Bytes are checked with sha256 against the source; every
read has a time bound, and the watchdog kills a hung daemon.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

import harness
from harness import MiB

PROXY = harness.PROXY
S3Proxy = harness.S3Proxy
MOTO: harness.MotoServer
S3RVER: harness.S3rver
BUCKET = "faults"
OBJECTS: dict[str, bytes] = {}  # key on S3RVER -> bytes
MOTO_OBJECTS: dict[str, bytes] = {}

# warmfs tries each request 6 times (RetryPolicy::max_attempts); a fault that fires at most
# this many times can never exhaust one request's budget, so every read must succeed.
UNDER_RETRY_BUDGET = 5
EIO_WITHIN = 60.0       # seconds for a read of an always-failing object to give up
LOW_SPEED_TIME = 20.0   # warmfs aborts a transfer slower than 1 KiB/s for this long


def setUpModule():
    harness.require("warmfs", "fuse", "moto", "s3rver")
    if not os.access(PROXY, os.X_OK):
        raise harness.HarnessError(f"{PROXY} is missing or not executable")
    global MOTO, S3RVER
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    S3RVER = harness.start_server(unittest.addModuleCleanup, harness.S3rver())
    OBJECTS.update({
        "slowdown.bin": harness.make_data(16 * MiB + 11, 2),
        "cut.bin": harness.make_data(24 * MiB + 5, 3),
        "bad.bin": harness.make_data(4 * MiB + 1, 4),
        "good.bin": harness.make_data(3 * MiB + 7, 5),
        "stall.bin": harness.make_data(8 * MiB + 3, 6),
        "stall-long.bin": harness.make_data(6 * MiB + 9, 7),
        "latency-64MiB.bin": harness.make_data(64 * MiB, 8),
    })
    c = S3RVER.client()
    harness.create_bucket(c, BUCKET)
    harness.put_many(c, BUCKET, OBJECTS, threads=4)
    MOTO_OBJECTS["r500.bin"] = harness.make_data(12 * MiB + 3, 1)
    c = MOTO.client()
    harness.create_bucket(c, BUCKET)
    harness.put_many(c, BUCKET, MOTO_OBJECTS)


def sha256sum(path: Path, timeout: float) -> str:
    """sha256 of a file read by sha256sum, which must finish within timeout seconds."""
    try:
        run = subprocess.run(["sha256sum", str(path)], capture_output=True, timeout=timeout,
                             env={"PATH": harness.BASE_PATH})
    except subprocess.TimeoutExpired:
        raise AssertionError(f"sha256sum {path} did not finish within {timeout}s") from None
    if run.returncode != 0:
        raise AssertionError(f"sha256sum {path} exited {run.returncode}: {run.stderr!r}")
    return run.stdout.split()[0].decode()


def run_clients(client, n: int, join_timeout: float) -> None:
    """client(0) .. client(n - 1), each on its own thread, all at once; waits for each in turn
    at most join_timeout seconds (a client that hangs shows as a missing result)."""
    import threading
    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(join_timeout)


class FaultCase(harness.WarmfsTestCase):
    timeout = 100.0

    def proxy(self, upstream: harness._Server, *args: str, faults: list[str] = ()) -> S3Proxy:
        p = S3Proxy(upstream, [*args, *(a for f in faults for a in ("--fault", f))])
        harness.start_server(self.addCleanup, p)
        return p

    def assert_reads(self, m: harness.Mount, key: str, data: bytes, within: float = 60.0) -> float:
        """sha256 of the file through the mount equals the source's; returns the seconds taken."""
        start = time.monotonic()
        self.assertEqual(sha256sum(m.path / key, within), harness.sha256(data),
                         f"{key}: wrong bytes\n{m.log_tail()}")
        return time.monotonic() - start


class TransientErrors(FaultCase):
    def test_500s_fewer_than_the_retry_budget_are_retried(self):
        # moto with authentication on: each retry is re-signed and still accepted.
        spec = f"GET:^/{BUCKET}/r500\\.bin:status=500:count={UNDER_RETRY_BUDGET}"
        p = self.proxy(MOTO, faults=[spec])
        m = self.mount(p, f"s3://{BUCKET}")
        self.assert_reads(m, "r500.bin", MOTO_OBJECTS["r500.bin"])
        self.assertEqual(p.injected(), {spec: UNDER_RETRY_BUDGET})
        stats = m.stats()
        self.assertGreaterEqual(stats["bucket_retries"], UNDER_RETRY_BUDGET, stats)
        self.assertEqual(p.stats()["responses_by_status"].get("500"), UNDER_RETRY_BUDGET)

    def test_503_slowdown_is_retried(self):
        spec = f"GET|HEAD:^/{BUCKET}/slowdown\\.bin:status=503:every=2:count={UNDER_RETRY_BUDGET}"
        p = self.proxy(S3RVER, faults=[spec])
        m = self.mount(p, f"s3://{BUCKET}")
        self.assert_reads(m, "slowdown.bin", OBJECTS["slowdown.bin"])
        injected = p.injected()[spec]
        self.assertGreaterEqual(injected, 1, p.stats())
        self.assertGreaterEqual(m.stats()["bucket_retries"], injected)

    def test_resets_and_truncated_bodies_are_retried_never_wrong_bytes(self):
        # Request by request (every fault counts each matching request): 1 reset before the
        # response, 2 reset after 300000 body bytes, 3 truncated at 500000 bytes (FIN), 4 reset
        # after 300000, 6 truncated: 5 failures in all, fewer than one request's budget.
        target = f"^/{BUCKET}/cut\\.bin"
        specs = [f"GET:{target}:reset:count=1",
                 f"GET:{target}:reset-after=300000:every=2:count=2",
                 f"GET:{target}:truncate=500000:every=3:count=2"]
        p = self.proxy(S3RVER, faults=specs)
        m = self.mount(p, f"s3://{BUCKET}")
        self.assert_reads(m, "cut.bin", OBJECTS["cut.bin"])
        self.assertEqual(p.injected(), dict(zip(specs, [1, 2, 2])), p.stats())
        # Every body cut short is a retry of warmfs's (it resumes after the bytes it got, so a
        # cut may fall past the end of the shorter request that follows and cut nothing).
        # The reset before any response byte may not be: on a reused connection curl itself
        # resends once on a fresh one.
        cut = p.stats()["bodies_cut"]
        self.assertGreaterEqual(cut, 2, p.stats())
        self.assertGreaterEqual(m.stats()["bucket_retries"], cut)
        # Resuming: the proxy sent the object's bytes once (plus listings); what a cut body
        # brought is kept, not asked for again.
        self.assertLessEqual(p.stats()["bytes_to_client"], len(OBJECTS["cut.bin"]) + 200_000,
                             p.stats())
        # Read again through a new mount with random preads (one GET per chunk): a cut body
        # must never surface as short or wrong bytes at any offset.
        p.set_faults([f"GET:{target}:truncate=100000:every=3:count=4",
                      f"GET:{target}:reset-after=700000:every=4:count=1"])
        m2 = self.mount(p, f"s3://{BUCKET}")
        data = OBJECTS["cut.bin"]
        fd = os.open(m2.path / "cut.bin", os.O_RDONLY)
        self.addCleanup(os.close, fd)
        for i, off in enumerate([5 * MiB + 17, 0, 17 * MiB - 3, 9 * MiB, 23 * MiB, 2 * MiB + 1]):
            length = (i + 1) * 300_000
            self.assertEqual(os.pread(fd, length, off), data[off:off + length],
                             f"pread({off}, {length})\n{m2.log_tail()}")
        self.assertGreaterEqual(sum(p.injected().values()), 1, p.stats())


class PersistentErrors(FaultCase):
    def test_always_500_fails_with_eio_in_bounded_time_then_recovers(self):
        spec = f"GET:^/{BUCKET}/bad\\.bin:status=500"
        p = self.proxy(S3RVER, faults=[spec])
        m = self.mount(p, f"s3://{BUCKET}")
        path = m.path / "bad.bin"
        self.assertEqual(os.stat(path).st_size, len(OBJECTS["bad.bin"]))  # LIST/HEAD still work
        start = time.monotonic()
        with open(path, "rb", buffering=0) as f:
            with self.assertRaises(OSError) as caught:
                f.read(MiB)
        took = time.monotonic() - start
        self.assertEqual(caught.exception.errno, errno.EIO, f"{caught.exception!r}")
        self.assertLess(took, EIO_WITHIN, f"EIO took {took:.1f}s\n{m.log_tail()}")
        self.assertGreaterEqual(p.injected()[spec], 6)  # at least one request's whole budget
        self.assertGreaterEqual(m.stats()["bucket_errors"], 1)
        # Other objects are unaffected, while the fault is still on.
        self.assert_reads(m, "good.bin", OBJECTS["good.bin"])
        # Cleared at run time: the same file reads correctly once opened again.
        p.clear_faults()
        self.assert_reads(m, "bad.bin", OBJECTS["bad.bin"])


class Stalls(FaultCase):
    def test_short_stall_mid_body_then_resume(self):
        # 3 s without a byte, half-way into the body, twice: well inside warmfs's low-speed
        # limit, so the transfers just wait and finish.
        spec = f"GET:^/{BUCKET}/stall\\.bin:stall=3:count=2"
        p = self.proxy(S3RVER, faults=[spec])
        m = self.mount(p, f"s3://{BUCKET}")
        took = self.assert_reads(m, "stall.bin", OBJECTS["stall.bin"], within=60)
        self.assertEqual(p.injected(), {spec: 2})
        self.assertGreaterEqual(took, 3.0)  # it did wait for a stalled body

    def test_stall_longer_than_the_low_speed_limit_is_aborted_and_retried(self):
        # 60 s without a byte: warmfs must give up on that transfer after ~20 s (1 KiB/s for
        # 20 s) and retry it, instead of waiting for the server.
        spec = f"GET:^/{BUCKET}/stall-long\\.bin:stall=60:after=200000:count=1"
        p = self.proxy(S3RVER, faults=[spec])
        m = self.mount(p, f"s3://{BUCKET}")
        took = self.assert_reads(m, "stall-long.bin", OBJECTS["stall-long.bin"], within=55)
        self.assertEqual(p.injected(), {spec: 1})
        self.assertGreater(took, LOW_SPEED_TIME - 2, "the stall did not delay the read")
        self.assertGreaterEqual(m.stats()["bucket_retries"], 1)


class Latency(FaultCase):
    def test_64mib_with_15ms_first_byte_delay(self):
        p = self.proxy(S3RVER, "--first-byte-delay-ms", "15")
        m = self.mount(p, f"s3://{BUCKET}")
        took = self.assert_reads(m, "latency-64MiB.bin", OBJECTS["latency-64MiB.bin"], within=80)
        stats = p.stats()
        # Read-ahead splits the object into range GETs (a window starts small and grows, up
        # to 64 MiB a request, so how many depends on timing), and no byte is fetched twice.
        self.assertGreaterEqual(stats["responses_by_status"].get("206", 0), 2, stats)
        self.assertEqual(m.stats()["bucket_bytes_read"], len(OBJECTS["latency-64MiB.bin"]))
        print(f"\n  64 MiB with 15 ms first-byte delay: {took:.2f}s, "
              f"{stats['requests']} requests", file=sys.stderr)


class ProxyItself(FaultCase):
    """The proxy's own contract, which the tests above lean on: many concurrent kept-alive
    connections, clients that vanish mid-body, and exit 0 on SIGTERM."""

    def test_concurrent_clients_disconnects_and_sigterm(self):
        import http.client
        import socket
        p = self.proxy(S3RVER)
        key, data = "good.bin", OBJECTS["good.bin"]
        results: list[str] = []

        def client(i: int) -> None:
            try:
                if i % 4 == 0:  # asks for the whole object, reads a little, resets
                    with socket.create_connection(("127.0.0.1", p.port), timeout=10) as s:
                        s.sendall(f"GET /{BUCKET}/{key} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                        s.recv(1000)
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
                    results.append("cut")
                    return
                conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=10)
                for j in range(4):  # one connection, several requests
                    off = (i * 7919 + j * 104729) % len(data)
                    conn.request("GET", f"/{BUCKET}/{key}",
                                 headers={"Range": f"bytes={off}-{off + 99_999}"})
                    r = conn.getresponse()
                    if r.read() != data[off:off + 100_000]:
                        results.append(f"wrong bytes at {off}")
                        return
                conn.close()
                results.append("ok")
            except Exception as e:  # reported below
                results.append(repr(e))

        run_clients(client, 64, 30)
        self.assertEqual(sorted(results), ["cut"] * 16 + ["ok"] * 48)
        deadline = time.monotonic() + 5  # the proxy may still be closing the reset ones
        while (stats := p.stats())["connections_active"] and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(stats["connections_active"], 0, stats)
        self.assertEqual(stats["requests"], 48 * 4 + 16, stats)
        p.proc.send_signal(signal.SIGTERM)
        self.assertEqual(p.proc.wait(10), 0, harness._tail(p.log))

    def test_per_connection_cap_holds_each_connection_and_keeps_bytes(self):
        """Under a per-connection cap a large body is spliced and paced by its thread, a small
        one paced through asyncio: each connection gets no more than the cap (the time a body
        takes has a floor: a lower bound only, which load cannot break), and bytes are exact."""
        import http.client
        rate = 5e6  # 40 Mbit/s
        p = self.proxy(S3RVER, "--bandwidth-mbps", "40", "--bandwidth-scope", "connection")
        key, data = "stall.bin", OBJECTS["stall.bin"]
        ranges = [(0, 4 * MiB), (4 * MiB + 1, 200_000)]  # spliced, then through asyncio
        results: list[object] = []

        def client(i: int) -> None:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=30)
                start = time.monotonic()
                for off, n in ranges:
                    conn.request("GET", f"/{BUCKET}/{key}",
                                 headers={"Range": f"bytes={off}-{off + n - 1}"})
                    r = conn.getresponse()
                    if r.read() != data[off:off + n]:
                        results.append(f"wrong bytes at {off}")
                        return
                conn.close()
                results.append(time.monotonic() - start)
            except Exception as e:  # reported below
                results.append(repr(e))

        run_clients(client, 2, 60)
        self.assertEqual(len(results), 2, results)
        total = sum(n for _, n in ranges)
        floor = total / rate - 2 * 0.02  # the pacer lets 20 ms of bytes through unpaced per body
        for took in results:
            self.assertIsInstance(took, float, results)
            self.assertGreaterEqual(took, floor, f"a connection beat its cap: {results}")
        sent = p.stats()["bytes_to_client"]  # bodies and four response heads
        self.assertTrue(2 * total < sent < 2 * total + 4 * 1024, sent)


class MountCheck(FaultCase):
    def test_mount_check_meets_only_500s(self):
        p = self.proxy(S3RVER, faults=["*:*:status=500"])
        d = harness.temp_dir(self.addCleanup, "warmfs-faults-", subdirs=("mnt", "home"),
                             mounts=("mnt",))
        mnt, home = d / "mnt", d / "home"
        log = harness.log_dir("mounts") / "faults-mount-check.log"
        run = harness.run_cli(["mount", f"s3://{BUCKET}", mnt, "--endpoint", p.endpoint,
                               "--region", harness.REGION, "--path-style", "--log-file", log,
                               "--log-level", "debug"],
                              harness.base_env(home, p.key, p.secret), timeout=45)
        lines = self.assert_refused(run, mnt, 30.0)
        self.assertTrue(lines[0].startswith("warmfs: "), run.describe())
        self.assertIn("500", lines[0], run.describe())
        self.assertGreaterEqual(p.stats()["faults_injected"], 1)


if __name__ == "__main__":
    unittest.main()
