"""Prometheus metrics (`--metrics-listen`) of `warmfs mount` and `warmfs serve`.

What is checked:
- a busy mount (reader threads reading files cold, then again, while a writer writes and fsyncs
  a file) scraped over and over while busy: every scrape is 200 text/plain; version=0.0.4 and
  passes `promtool check metrics`; no counter, histogram bucket, _sum or _count goes down
  between scrapes; each histogram's buckets are cumulative with +Inf equal to _count;
- once quiet, the values agree with `warmfs stats --json` taken just before and just after the
  scrape (reads, bucket bytes and requests, memory bytes, uploads), and with what the test did
  (the bucket gave each file's bytes exactly once, readers got at least every byte of every
  file, the file written went to the bucket);
- anything but GET /metrics answers 404;
- a metrics port in use: mount and serve exit 1 with one line naming the address, before
  mounting or serving; a port of 0 or a host name is a usage error (exit 2);
- `warmfs serve --metrics-listen` after a mount read through it: request counts by status, the
  bytes served and the bucket bytes agree with `warmfs stats --server --json` and with the file
  read; the mount's own server tier counts those bytes.

promtool comes from Debian's prometheus package (tools/lib/install-deps.sh); without it every
test fails. Data on s3rver.
"""

import json
import os
import re
import signal
import socket
import subprocess
import threading
import unittest
from pathlib import Path

import harness
import ssd_helpers as ssd
from harness import KiB, MiB
from prometheus import Scrape, fetch, require_promtool, scrape

S3RVER: harness.S3rver
BUCKET = "metrics"
# Cold reads of several chunks each, a few small files, sizes not page-aligned.
FILES = {f"data/f{i}.bin": harness.make_data(n, seed=300 + i)
         for i, n in enumerate([3 * MiB + 17, 2 * MiB - 5, 5 * MiB, 700 * KiB + 1,
                                64 * KiB, 4 * MiB + 4097])}
DATA_BYTES = sum(len(v) for v in FILES.values())
WRITE_BYTES = 2 * MiB + 123
SERVED = {"served/s.bin": harness.make_data(6 * MiB + 5, seed=400)}


def setUpModule():
    harness.require("warmfs", "fuse", "s3rver")
    require_promtool()
    global S3RVER
    S3RVER = harness.start_server(unittest.addModuleCleanup, harness.S3rver())
    c = S3RVER.client()
    harness.create_bucket(c, BUCKET)
    harness.put_many(c, BUCKET, {**FILES, **SERVED})




def assert_never_down(case: unittest.TestCase, scrapes: list[Scrape]) -> None:
    for before, after in zip(scrapes, scrapes[1:]):
        for key in before.monotonic_keys():
            case.assertIn(key, after.values, f"{key} vanished between scrapes")
            case.assertGreaterEqual(after.values[key], before.values[key], f"{key} went down")


def assert_between(case, low: float, value: float, high: float, what: str) -> None:
    case.assertTrue(low <= value <= high, f"{what}: {value} not within stats' [{low}, {high}]")


def one_line_error(case, run: harness.Run, *needles: str) -> None:
    case.assertEqual(run.rc, 1, run.describe())
    lines = run.stderr.strip().splitlines()
    case.assertEqual(len(lines), 1, run.describe())
    case.assertTrue(lines[0].startswith("warmfs: "), run.describe())
    for n in needles:
        case.assertIn(n, lines[0], run.describe())


# ---- tests ---------------------------------------------------------------------------------


class MountMetrics(harness.WarmfsTestCase):
    timeout = 180.0

    def test_busy_mount_scrapes_are_valid_monotonic_and_agree_with_stats(self):
        port = harness.free_port()
        cache_dir = harness.temp_dir(self.addCleanup, "warmfs-metrics-cache-")
        m = self.mount(S3RVER, f"s3://{BUCKET}",
                       args=["--metrics-listen", f"127.0.0.1:{port}", "--cache-dir", str(cache_dir),
                             "--cache-size", "256M"])
        scrapes = [scrape(self, port)]
        errors: list[str] = []
        # Readers go on (past their three passes) until this many scrapes were taken while
        # they read, so the scrapes overlap the reads however fast either is.
        busy_scrapes = 5
        scraped_enough = threading.Event()

        def reader(seed: int) -> None:
            try:
                keys = sorted(FILES)
                keys = keys[seed % len(keys):] + keys[:seed % len(keys)]
                passes = 0
                # Cold, then warm from warmfs's caches.
                while passes < 3 or (not scraped_enough.is_set() and passes < 200):
                    passes += 1
                    for k in keys:
                        with open(m.path / k, "rb") as f:
                            # Drop the kernel's pages of the file, so the read reaches warmfs.
                            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                            if f.read() != FILES[k]:
                                errors.append(f"reader {seed}: wrong bytes in {k}")
            except Exception as e:  # reported below, not lost in the thread
                errors.append(f"reader {seed}: {e!r}")

        def writer() -> None:
            try:
                (m.path / "out").mkdir(exist_ok=True)
                with open(m.path / "out" / "w.bin", "wb") as f:
                    f.write(harness.make_data(WRITE_BYTES, seed=500))
                    f.flush()
                    os.fsync(f.fileno())
            except Exception as e:
                errors.append(f"writer: {e!r}")

        threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
        threads.append(threading.Thread(target=writer))
        for t in threads:
            t.start()
        try:
            while any(t.is_alive() for t in threads):
                scrapes.append(scrape(self, port))
                if len(scrapes) > busy_scrapes:
                    scraped_enough.set()
        finally:  # a failed scrape lets the readers stop too
            scraped_enough.set()
            for t in threads:
                t.join()
        self.assertGreater(len(scrapes), busy_scrapes)
        self.assertEqual(errors, [])

        before = m.stats()
        final = scrape(self, port)
        after = m.stats()
        scrapes.append(final)
        assert_never_down(self, scrapes)

        # Against warmfs stats --json, taken on both sides of the scrape.
        pairs = [
            ("warmfs_reads_total", {}, "read_requests"),
            ("warmfs_read_bytes_total", {"tier": "bucket"}, "bucket_bytes_read"),
            ("warmfs_bucket_bytes_total", {"direction": "read"}, "bucket_bytes_read"),
            ("warmfs_bucket_bytes_total", {"direction": "written"}, "bucket_bytes_written"),
            ("warmfs_read_bytes_total", {"tier": "memory"}, "memory_hit_bytes"),
            ("warmfs_read_bytes_total", {"tier": "disk"}, "disk_hit_bytes"),
            ("warmfs_read_returned_bytes_total", {}, "bytes_read"),
            ("warmfs_uploads_completed_total", {}, "uploads_completed"),
            ("warmfs_upload_failures_total", {}, "upload_failures"),
            ("warmfs_bucket_retries_total", {}, "bucket_retries"),
            ("warmfs_bucket_errors_total", {}, "bucket_errors"),
        ]
        for name, labels, key in pairs:
            assert_between(self, before[key], final.get(name, **labels), after[key], name)
        for op in ("get", "head", "list", "put", "multipart", "copy", "delete"):
            assert_between(self, before["bucket_requests"][op],
                           final.get("warmfs_bucket_requests_total", op=op),
                           after["bucket_requests"][op], f"requests op={op}")
        self.assertEqual(final.get("warmfs_cache_capacity_bytes", tier="memory"),
                         after["memory_cache"]["capacity_bytes"])
        self.assertEqual(final.get("warmfs_cache_capacity_bytes", tier="disk"),
                         after["cache_capacity_bytes"])

        # Against what the test did.
        self.assertEqual(final.get("warmfs_read_bytes_total", tier="bucket"), DATA_BYTES,
                         "the bucket gives each file's bytes once")
        # Four readers, three passes each, the kernel's pages dropped before each: at least one
        # whole pass per reader reached warmfs, some of it from its caches.
        self.assertGreaterEqual(final.get("warmfs_read_returned_bytes_total"), 4 * DATA_BYTES)
        self.assertGreater(final.get("warmfs_read_bytes_total", tier="memory") +
                           final.get("warmfs_read_bytes_total", tier="disk"), 0)
        self.assertGreaterEqual(final.get("warmfs_bucket_bytes_total", direction="written"),
                                WRITE_BYTES)
        self.assertGreaterEqual(final.get("warmfs_uploads_completed_total"), 1)
        self.assertEqual(final.get("warmfs_upload_failures_total"), 0)
        self.assertEqual(final.get("warmfs_uploads_in_flight"), 0)
        self.assertGreaterEqual(final.get("warmfs_bucket_requests_total", op="get"), 1)
        self.assertGreaterEqual(final.get("warmfs_bucket_request_duration_seconds_count", op="get"),
                                1)
        self.assertGreater(final.get("warmfs_cache_used_bytes", tier="memory"), 0)
        # Every finished read is in the histogram; its total time is the readers' wait.
        reads = final.get("warmfs_reads_total")
        self.assertGreater(reads, 0)
        self.assertEqual(final.get("warmfs_read_latency_seconds_count"), reads)
        self.assertGreater(final.get("warmfs_reader_wait_seconds_total"), 0)
        self.assertAlmostEqual(final.get("warmfs_reader_wait_seconds_total"),
                               final.get("warmfs_read_latency_seconds_sum"), places=9)
        self.assertEqual(final.get("warmfs_build_info", version=final_version(final)), 1)
        self.assertGreater(final.get("warmfs_process_resident_memory_bytes"), 0)

        for path in ("/", "/metric", "/metrics/", "/v1/stats"):
            status, _, _ = fetch(port, path)
            self.assertEqual(status, 404, path)
        print(f"\n{len(scrapes)} scrapes; the last begins:\n" +
              "\n".join(final.text.splitlines()[:40]))


def final_version(s: Scrape) -> str:
    for (name, labels) in s.values:
        if name == "warmfs_build_info":
            return dict(labels)["version"]
    raise AssertionError("no warmfs_build_info")


class ListenErrors(harness.WarmfsTestCase):
    def _busy_port(self) -> int:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        self.addCleanup(sock.close)
        return sock.getsockname()[1]

    def test_mount_with_metrics_port_in_use_fails_before_mounting(self):
        port = self._busy_port()
        m = harness.Mount(S3RVER, f"s3://{BUCKET}", args=["--metrics-listen", f"127.0.0.1:{port}"],
                          name="metrics-port-in-use")
        self.addCleanup(m.close)
        run = harness.run_cli(m.args, m.env, timeout=60)
        one_line_error(self, run, f"127.0.0.1:{port}", "in use")
        self.assertFalse(harness.is_mounted(m.path))
        self.assertEqual(harness.daemon_pids(m.path), [])

    def test_serve_with_metrics_port_in_use_exits_before_serving(self):
        port = self._busy_port()
        listen = harness.free_port()
        cache_dir = harness.temp_dir(self.addCleanup, "warmfs-metrics-serve-")
        home = harness.temp_dir(self.addCleanup, "warmfs-metrics-home-")
        run = harness.run_cli(serve_args(cache_dir, listen) + [
                              "--metrics-listen", f"127.0.0.1:{port}",
                              "--log-file", str(home / "serve.log")],
                              harness.base_env(home, S3RVER.key, S3RVER.secret), timeout=60)
        one_line_error(self, run, f"127.0.0.1:{port}", "in use")
        with socket.socket() as s:
            self.assertNotEqual(s.connect_ex(("127.0.0.1", listen)), 0, "serve still listening")

    def test_bad_metrics_addresses_are_usage_errors(self):
        home = harness.temp_dir(self.addCleanup, "warmfs-metrics-home-")
        env = harness.base_env(home)
        for bad, why in (("127.0.0.1:0", "between 1 and 65535"), ("example.com:9100", "host"),
                         ("9100", "HOST:PORT"), ("127.0.0.1:99999", "up to 65535")):
            for cmd in (["mount", f"s3://{BUCKET}", str(home)],
                        ["serve", "--bucket", BUCKET, "--cache-dir", str(home / "c"),
                         "--insecure-no-token"]):
                run = harness.run_cli(cmd + ["--metrics-listen", bad], env, timeout=30)
                self.assertEqual(run.rc, 2, run.describe())
                self.assertIn("--metrics-listen", run.stderr, run.describe())
                self.assertIn(why, run.stderr, run.describe())
                self.assertEqual(len(run.stderr.strip().splitlines()), 1, run.describe())


def serve_args(cache_dir: Path, listen: int) -> list[str]:
    return ["serve", "--bucket", BUCKET, "--listen", f"127.0.0.1:{listen}",
            "--endpoint", S3RVER.endpoint, "--region", harness.REGION, "--path-style",
            "--cache-dir", str(cache_dir), "--cache-size", "128M", "--memory-cache-size", "32M",
            "--insecure-no-token", "--log-level", "debug"]


class ServeMetrics(harness.WarmfsTestCase):
    timeout = 120.0

    def test_serve_metrics_after_a_mount_reads_through_it(self):
        listen, mport, mount_port = harness.free_port(), harness.free_port(), harness.free_port()
        cache_dir = harness.temp_dir(self.addCleanup, "warmfs-metrics-serve-")
        home = harness.temp_dir(self.addCleanup, "warmfs-metrics-home-")
        log = harness.log_dir("servers") / f"warmfs-metrics-serve-{listen}.log"
        argv = [str(harness.WARMFS)] + serve_args(cache_dir, listen) + [
            "--metrics-listen", f"127.0.0.1:{mport}"]
        with open(log, "ab") as out:
            proc = subprocess.Popen(argv, env=harness.base_env(home, S3RVER.key, S3RVER.secret),
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        with harness._live_lock:
            harness._live_procs[proc.pid] = proc
        self.addCleanup(stop_proc, proc)
        harness.wait_port(listen, proc, log, 30)
        harness.wait_port(mport, proc, log, 30)
        first = scrape(self, mport)
        url = f"http://127.0.0.1:{listen}"

        m = self.mount(S3RVER, f"s3://{BUCKET}",
                       args=["--memory-cache-size", "16M", "--cache-server", url,
                             "--insecure-no-token", "--metrics-listen", f"127.0.0.1:{mount_port}"])
        (key, data), = SERVED.items()
        self.assertEqual((m.path / key).read_bytes(), data)

        run = harness.run_cli(["stats", "--server", url, "--json", "--insecure-no-token"],
                              harness.base_env(home), timeout=15)
        self.assertEqual(run.rc, 0, run.describe())
        before = json.loads(run.stdout)
        final = scrape(self, mport)
        run = harness.run_cli(["stats", "--server", url, "--json", "--insecure-no-token"],
                              harness.base_env(home), timeout=15)
        after = json.loads(run.stdout)
        assert_never_down(self, [first, final])

        served = (final.get("warmfs_server_served_bytes_total", result="hit") +
                  final.get("warmfs_server_served_bytes_total", result="miss"))
        assert_between(self, before["bytes_served"], served, after["bytes_served"], "served bytes")
        self.assertEqual(served, len(data), "each chunk of the file served once")
        assert_between(self, before["bucket_bytes_read"],
                       final.get("warmfs_bucket_bytes_total", direction="read"),
                       after["bucket_bytes_read"], "server's bucket bytes")
        self.assertEqual(final.get("warmfs_bucket_bytes_total", direction="read"), len(data))
        chunks = (len(data) + MiB - 1) // MiB
        self.assertEqual(final.get("warmfs_server_chunk_requests_total"), chunks)
        ok = final.get("warmfs_server_requests_total", status="200")
        self.assertGreaterEqual(ok, chunks)  # the chunks, /v1/info and /v1/stats
        self.assertEqual(final.get("warmfs_server_request_duration_seconds_count"),
                         sum(v for (n, _), v in final.values.items()
                             if n == "warmfs_server_requests_total"))
        self.assertEqual(final.get("warmfs_cache_capacity_bytes", tier="disk"),
                         after["ssd_cache"]["capacity_bytes"])

        mount_side = scrape(self, mount_port)
        self.assertEqual(mount_side.get("warmfs_read_bytes_total", tier="server"), len(data))
        self.assertEqual(mount_side.get("warmfs_read_bytes_total", tier="bucket"), 0)


def stop_proc(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    with harness._live_lock:
        harness._live_procs.pop(proc.pid, None)


if __name__ == "__main__":
    unittest.main()
