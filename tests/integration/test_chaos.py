"""Chaos runs: warmfs behind tools/s3proxy failing 5% of requests of every method, with every kind
of fault the proxy has (500 InternalError, 503 SlowDown, a connection reset before the answer,
a body cut after 100 bytes, a 2 s stall mid-body, well under the 20 s low-speed limit), 1% each,
drawn with prob= from a fixed seed.

- Reads: a dataset of mixed sizes (hundreds of small files, files of a few MiB, two of many
  chunks) read whole by several threads while others pread the large files at random; a few
  files behind a burst of 500s longer than one request's retry budget. Every sha256 and every
  pread equals the source (0 wrong bytes); a read that fails fails with EIO within a bound and
  reads right when the reader tries again, as a data loader would; no read hangs.
- Checkpoint saves (moto with authentication): write a temporary file, fsync, rename it over the
  previous checkpoint, again and again, as torch.save to a temporary name and os.replace do,
  with full outages of the bucket during some fsyncs and renames. After every fsync that
  returned 0 the bucket (boto3, straight to moto) holds exactly those bytes; the checkpoint key
  always holds a whole saved version; a failed fsync, close or rename is an error the test sees
  and retries; 0 fsynced writes lost.
- A cache server (`warmfs serve`) killed with SIGKILL during reads through a mount that uses it,
  then restarted: reads go on with the right bytes (from the bucket) and use it again.
- An SSD tier whose region file is cut short and overwritten in places between two mounts: the
  second mount drops what is missing, catches the overwritten chunks by their CRC32C and
  fetches them again, never serving wrong bytes. Bytes flipped in many regions are
  test_ssd_cache.Corruption's; this adds a region cut mid-record and whole blocks overwritten,
  with the refetches going through the faults.

Every test checks that its faults happened: the proxy's counters (kept across changes of its
fault list), the kill, the damage done. The seed is fixed so that runs are comparable: with it
every kind of fault fires within the first 20 requests that draw from it, so each kind shows
up in every test that makes more requests than that. Figures go to stderr (`chaos:` lines) and
are recorded in docs/reliability.md.
"""

from __future__ import annotations

import collections
import errno
import hashlib
import os
import random
import re
import signal
import threading
import time
import unittest
from pathlib import Path

import harness
import ssd_helpers as ssd
from harness import KiB, MiB
from test_serve import CacheServer

MOTO: harness.MotoServer
S3RVER: harness.S3rver

CHAOS_SEED = 772
KINDS = {"500": "status=500", "503 SlowDown": "status=503", "reset": "reset",
         "truncated body": "truncate=100", "stall 2 s": "stall=2"}
CHAOS = [f"*:*:{action}:prob=0.01" for action in KINDS.values()]
OUTAGE = "*:*:status=503"  # every request, until cleared

EIO_WITHIN = 45.0      # seconds for one failed read or call (retry budget plus stalls)
ATTEMPT_WITHIN = 90.0  # seconds for one whole-file read that succeeds (48 MiB under faults)

# Reads (s3rver): ~100 MiB in 600 small files, 8 of a few MiB, 2 of many chunks, 5 flaky.
READ_BUCKET = "chaos-read"
_rng = random.Random(17)
SMALL = {f"small/d{i % 6}/s{i:03d}.bin": harness.make_data(_rng.randrange(0, 48 * KiB), 100 + i)
         for i in range(600)}
MID = {f"mid/m{i}.bin": harness.make_data(n, 800 + i)
       for i, n in enumerate([MiB - 1, MiB + 7, 2 * MiB, 3 * MiB - 5, 3 * MiB + 11, 4 * MiB,
                              5 * MiB + 3, 5 * MiB - 9])}
BIG = {"big/b0.bin": harness.make_data(48 * MiB + 13, 900),
       "big/b1.bin": harness.make_data(20 * MiB - 3, 901)}
FLAKY = {f"flaky/f{i}.bin": harness.make_data(20 * KiB + 97 * i, 950 + i) for i in range(5)}
READ_SET = {**SMALL, **MID, **BIG, **FLAKY}
# The first FLAKY_BURST GETs of flaky/ answer 500: one request's whole budget (6 tries) twice,
# which is one EIO: the kernel asks a second time for a page whose read failed.
FLAKY_BURST = 12

# Cache server (s3rver): 12 files of 4 MiB, read again and again through a 16M memory cache.
SERVE_BUCKET = "chaos-serve"
SERVE_SET = {f"s/f{i:02d}.bin": harness.make_data(4 * MiB + 101 * i, 1000 + i) for i in range(12)}

# SSD tier (s3rver): 40 MiB, one 64 MiB region file.
SSD_BUCKET = "chaos-ssd"
SSD_SET = {f"d/f{i}.bin": harness.make_data(n, 1100 + i)
           for i, n in enumerate([3 * MiB + 1, 5 * MiB, 7 * MiB - 3, 200 * KiB, 9 * MiB + 7,
                                  6 * MiB, 10 * MiB - 11])}

CKPT_BUCKET = "chaos-ckpt"


def setUpModule():
    harness.require("warmfs", "fuse", "moto", "s3rver")
    ssd.require_cache_dir_support()
    global MOTO, S3RVER
    S3RVER = harness.start_server(unittest.addModuleCleanup, harness.S3rver())
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    c = S3RVER.client()
    for bucket, objects in [(READ_BUCKET, READ_SET), (SERVE_BUCKET, SERVE_SET),
                            (SSD_BUCKET, SSD_SET)]:
        harness.create_bucket(c, bucket)
        harness.put_many(c, bucket, objects, threads=8)
    # s3rver leaves a folder that holds only folders (small/) out of its parent's listing, and
    # warmfs answers the first lookup in a directory from its listing: a marker object makes it
    # visible, as it is on S3 (docs/testing.md).
    c.put_object(Bucket=READ_BUCKET, Key="small/", Body=b"")
    harness.create_bucket(MOTO.client(), CKPT_BUCKET)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ChaosProxy(harness.S3Proxy):
    """The fault proxy with the chaos seed. Its fault counters restart at 0 whenever the fault
    list changes; this keeps what each spec injected across changes."""

    def __init__(self, upstream: harness._Server) -> None:
        super().__init__(upstream, ["--seed", str(CHAOS_SEED)])
        self.totals: collections.Counter = collections.Counter()

    def set_faults(self, specs: list[str]) -> None:
        self.totals.update(self.injected())
        super().set_faults(specs)

    def all_injected(self) -> collections.Counter:
        return self.totals + collections.Counter(self.injected())

    def by_kind(self) -> dict[str, int]:
        total = self.all_injected()
        return {kind: total[spec] for kind, spec in zip(KINDS, CHAOS)}


class Outcomes:
    """What readers or writers saw, from many threads: bytes checked, failures (errno and how
    long the failing call took), wrong bytes, files given up on."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # protects everything below
        self.bytes_checked = 0
        self.reads_checked = 0
        self.failures: list[tuple[str, int | None, float]] = []
        self.wrong: list[str] = []
        self.gave_up: list[str] = []
        self.unexpected: list[str] = []
        self.slowest = 0.0

    def ok(self, n: int, seconds: float) -> None:
        with self.lock:
            self.bytes_checked += n
            self.reads_checked += 1
            self.slowest = max(self.slowest, seconds)

    def failed(self, what: str, e: OSError, seconds: float) -> None:
        with self.lock:
            self.failures.append((what, e.errno, seconds))

    def add(self, field: str, text: str) -> None:
        with self.lock:
            getattr(self, field).append(text)

    def summary(self) -> str:
        errnos = collections.Counter(errno.errorcode.get(e, str(e)) for _, e, _ in self.failures)
        return (f"{self.bytes_checked / MiB:.1f} MiB in {self.reads_checked} reads checked, "
                f"failures surfaced {dict(errnos) or 0}, wrong {len(self.wrong)}, gave up "
                f"{len(self.gave_up)}, slowest read {self.slowest:.1f} s")


read_file = harness.read_uncached


def read_until_right(out: Outcomes, path: Path, data: bytes, what: str, tries: int = 8) -> None:
    """Read a whole file, again after each failure (as a data loader would), until it reads;
    wrong bytes are recorded, never retried away."""
    for _ in range(tries):
        start = time.monotonic()
        try:
            got = read_file(path)
        except OSError as e:
            out.failed(what, e, time.monotonic() - start)
            continue
        took = time.monotonic() - start
        if sha(got) != sha(data):
            out.add("wrong", f"{what}: {len(got)} bytes, sha256 differs from the source's")
        else:
            out.ok(len(got), took)
        return
    out.add("gave_up", what)


def run_threads(targets: list, join_within: float) -> list[threading.Thread]:
    """Start the threads and join them all within join_within seconds; returns those still
    running (hung)."""
    threads = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in threads:
        t.start()
    deadline = time.monotonic() + join_within
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return [t for t in threads if t.is_alive()]


class ChaosCase(harness.WarmfsTestCase):
    timeout = 170.0

    def chaos_proxy(self, upstream: harness._Server) -> ChaosProxy:
        return harness.start_server(self.addCleanup, ChaosProxy(upstream))

    def assert_reads_sound(self, out: Outcomes, m: harness.Mount) -> None:
        """No wrong bytes, nothing given up, every failure EIO within EIO_WITHIN."""
        self.assertEqual(out.wrong, [], f"WRONG BYTES\n{m.log_tail()}")
        self.assertEqual(out.unexpected, [], m.log_tail())
        self.assertEqual(out.gave_up, [], f"{out.summary()}\n{m.log_tail()}")
        for what, err, seconds in out.failures:
            self.assertEqual(err, errno.EIO, f"{what}: failed with {errno.errorcode.get(err)}")
            self.assertLess(seconds, EIO_WITHIN, f"{what}: EIO after {seconds:.1f}s")
        self.assertLess(out.slowest, ATTEMPT_WITHIN, out.summary())

    def assert_every_kind(self, p: ChaosProxy) -> dict[str, int]:
        kinds = p.by_kind()
        self.assertEqual([k for k, n in kinds.items() if n == 0], [],
                         f"kinds of fault that never fired: {kinds}; {p.stats()}")
        return kinds


class Reads(ChaosCase):
    def test_mixed_dataset_through_many_readers(self):
        p = self.chaos_proxy(S3RVER)
        m = self.mount(p, f"s3://{READ_BUCKET}", args=["--read-only", "--memory-cache-size", "64M"])
        flaky = f"GET:^/{READ_BUCKET}/flaky/:status=500:count={FLAKY_BURST}"
        p.set_faults([flaky, *CHAOS])
        out = Outcomes()
        queue = list(BIG) + random.Random(5).sample(sorted({**SMALL, **MID}), len(SMALL) + len(MID))
        lock = threading.Lock()

        def whole_files():
            while True:
                with lock:
                    if not queue:
                        return
                    key = queue.pop(0)
                read_until_right(out, m.path / key, READ_SET[key], key)

        def preads(seed: int):
            rng = random.Random(seed)
            fds = {k: os.open(m.path / k, os.O_RDONLY) for k in BIG}
            try:
                for _ in range(150):
                    key = rng.choice(sorted(BIG))
                    data = BIG[key]
                    off = rng.randrange(len(data))
                    length = rng.choice([4 * KiB, 128 * KiB, MiB + 1, 3 * MiB])
                    for _ in range(8):
                        start = time.monotonic()
                        try:
                            got = os.pread(fds[key], length, off)
                        except OSError as e:
                            out.failed(f"{key} pread({off}, {length})", e, time.monotonic() - start)
                            continue
                        if got != data[off:off + length]:
                            out.add("wrong",
                                    f"{key} pread({off}, {length}): {len(got)} bytes differ")
                        else:
                            out.ok(len(got), time.monotonic() - start)
                        break
                    else:
                        out.add("gave_up", f"{key} pread({off}, {length})")
            finally:
                for fd in fds.values():
                    os.close(fd)

        def flaky_files():  # one thread, in order: the burst meets one request at a time
            for key in sorted(FLAKY):
                read_until_right(out, m.path / key, FLAKY[key], key)

        started = time.monotonic()
        hung = run_threads([whole_files] * 6 + [lambda: preads(1), lambda: preads(2), flaky_files],
                           join_within=150)
        took = time.monotonic() - started
        self.assertEqual(hung, [], f"readers still blocked after 150 s\n{out.summary()}")
        self.assert_reads_sound(out, m)
        self.assertEqual(queue, [])
        whole = sum(len(v) for v in READ_SET.values())
        self.assertGreaterEqual(out.bytes_checked, whole)
        stats, s = p.stats(), m.stats()
        flaky_fired = p.injected()[flaky]
        kinds = self.assert_every_kind(p)
        self.assertEqual(flaky_fired, FLAKY_BURST, stats)
        self.assertGreaterEqual(stats["bodies_cut"], 1, stats)
        self.assertGreaterEqual(len(out.failures), 1, "the burst on flaky/ surfaced no EIO")
        self.assertGreater(s["bucket_retries"], 0, s)
        ssd.note(f"\nchaos reads: {out.summary()}, in {took:.1f} s; {len(READ_SET)} files, "
                 f"{stats['requests']} requests, faults by kind {kinds} + flaky burst "
                 f"{flaky_fired}, bodies cut {stats['bodies_cut']}; warmfs bucket_retries "
                 f"{s['bucket_retries']}, bucket_errors {s['bucket_errors']}")


class CheckpointSaves(ChaosCase):
    """Each step saves a checkpoint as a training script does: write NAME.tmp, fsync, close,
    rename over NAME; any step that fails is retried. Sizes alternate between single PUTs and
    multipart uploads of 2 and 3 parts (8 MiB parts)."""

    STEPS = 24
    SIZES = [12 * MiB + 3, 700 * KiB + 1, 17 * MiB + 11, 3 * MiB - 7]
    OUTAGE_AT_FSYNC = {2, 13}
    OUTAGE_AT_RENAME = {4, 19}

    def bucket_get(self, key: str) -> bytes | None:
        c = MOTO.client()
        try:
            return c.get_object(Bucket=CKPT_BUCKET, Key=key)["Body"].read()
        except c.exceptions.NoSuchKey:
            return None

    def test_fsync_and_rename_sequence(self):
        p = self.chaos_proxy(MOTO)
        staging = ssd.temp_dir(self.addCleanup, "warmfs-chaos-staging-")
        m = self.mount(p, f"s3://{CKPT_BUCKET}/run", args=["--staging-dir", str(staging)])
        p.set_faults(CHAOS)
        out = Outcomes()
        final, tmp = m.path / "model.pt", m.path / "model.pt.tmp"
        prev: bytes | None = None
        saves = 0
        for step in range(self.STEPS):
            data = harness.make_data(self.SIZES[step % len(self.SIZES)] + step, 2000 + step)
            self.save(p, out, m, step, tmp, data)
            self.replace(p, out, m, step, tmp, final, data, prev)
            prev = data
            saves += 1
        p.set_faults([])
        self.assertEqual(out.wrong, [], f"LOST OR WRONG CHECKPOINT\n{m.log_tail()}")
        self.assertEqual(out.unexpected, [], m.log_tail())
        self.assertEqual(sorted(harness.list_keys(MOTO.client(), CKPT_BUCKET, "run/")),
                         ["run/model.pt"])
        self.assertEqual(sha(read_file(final)), sha(prev))
        for what, err, seconds in out.failures:
            self.assertEqual(err, errno.EIO, f"{what}: failed with {errno.errorcode.get(err)}")
            self.assertLess(seconds, EIO_WITHIN, f"{what}: EIO after {seconds:.1f}s")
        outages = len(self.OUTAGE_AT_FSYNC) + len(self.OUTAGE_AT_RENAME)
        self.assertGreaterEqual(len(out.failures), outages, out.failures)
        kinds = self.assert_every_kind(p)
        s = m.stats()
        # An upload whose abort met an outage stays open until the next mount on the same
        # staging dir aborts it (docs/reliability.md).
        left_open = len(self.open_uploads())
        ssd.unmount(self, m)
        self.mount(MOTO, f"s3://{CKPT_BUCKET}/run", args=["--staging-dir", str(staging)])
        self.assertEqual(self.open_uploads(), [], "the next mount left uploads open")
        ssd.note(f"\nchaos checkpoints: {saves} saves of {out.bytes_checked / MiB:.1f} MiB "
                 f"checked in the bucket after fsync and rename, failures surfaced and retried "
                 f"{[(w, errno.errorcode.get(e)) for w, e, _ in out.failures]}, "
                 f"{p.stats()['requests']} requests, faults by kind {kinds} + outage 503s "
                 f"{p.all_injected()[OUTAGE]}; warmfs bucket_retries {s['bucket_retries']}, "
                 f"upload_failures {s['upload_failures']}; multipart uploads left open "
                 f"{left_open}, aborted by the next mount")

    def open_uploads(self) -> list:
        return MOTO.client().list_multipart_uploads(Bucket=CKPT_BUCKET).get("Uploads", [])

    def outage(self, p: ChaosProxy, on: bool) -> None:
        p.set_faults([OUTAGE, *CHAOS] if on else CHAOS)

    def save(self, p, out, m, step, tmp, data) -> None:
        """Write, fsync (checked in the bucket the moment it returns 0), close; retried whole
        after a failed write or close, fsync retried on the same descriptor."""
        for attempt in range(6):
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view[:4 * MiB]):]
                synced = self.fsync(p, out, step, fd, attempt)
                if synced:
                    got = self.bucket_get("run/model.pt.tmp")
                    if got != data:
                        out.add("wrong", f"step {step}: fsync returned 0, bucket holds "
                                         f"{None if got is None else len(got)} other bytes")
                    else:
                        out.ok(len(data), 0)
            except OSError as e:
                out.failed(f"step {step} write", e, 0)
                synced = False
            finally:
                try:
                    os.close(fd)
                except OSError as e:
                    out.failed(f"step {step} close", e, 0)
                    synced = False
            if synced:
                return
        self.fail(f"step {step}: no save succeeded in 6 attempts: {out.failures}\n{m.log_tail()}")

    def fsync(self, p, out, step, fd, attempt) -> bool:
        outage = step in self.OUTAGE_AT_FSYNC and attempt == 0
        for n in range(5):
            if outage and n == 0:
                self.outage(p, True)
            start = time.monotonic()
            try:
                os.fsync(fd)
                return True
            except OSError as e:
                out.failed(f"step {step} fsync", e, time.monotonic() - start)
            finally:
                if outage and n == 0:
                    self.outage(p, False)
            if outage and n == 0 and self.bucket_get("run/model.pt.tmp") is not None:
                out.add("unexpected", f"step {step}: the temporary file reached the bucket "
                                      f"through an outage")
        return False

    def replace(self, p, out, m, step, tmp, final, data, prev) -> None:
        """rename over the previous checkpoint, retried after a failure; after each attempt the
        checkpoint key holds a whole version: the previous one or this one."""
        outage = step in self.OUTAGE_AT_RENAME
        for n in range(6):
            if outage and n == 0:
                self.outage(p, True)
            start = time.monotonic()
            try:
                os.rename(tmp, final)
                failed = False
            except OSError as e:
                out.failed(f"step {step} rename", e, time.monotonic() - start)
                failed = True
            finally:
                if outage and n == 0:
                    self.outage(p, False)
            got = self.bucket_get("run/model.pt")
            if not failed:
                if got != data:
                    out.add("wrong", f"step {step}: rename returned 0, the checkpoint holds "
                                     f"{None if got is None else len(got)} other bytes")
                else:
                    out.ok(len(data), 0)
                if self.bucket_get("run/model.pt.tmp") is not None:
                    out.add("unexpected", f"step {step}: the temporary key outlived the rename")
                return
            if got != prev and got != data:
                out.add("wrong", f"step {step}: after a failed rename the checkpoint holds "
                                 f"{None if got is None else len(got)} bytes, neither version")
            if outage and n == 0 and got != prev:
                out.add("unexpected", f"step {step}: a rename through an outage changed the "
                                      f"checkpoint")
        self.fail(f"step {step}: rename failed 6 times: {out.failures}\n{m.log_tail()}")


class CacheServerKilled(ChaosCase):
    def test_kill_and_restart_the_server_during_reads(self):
        p = self.chaos_proxy(S3RVER)
        d = ssd.temp_dir(self.addCleanup, "warmfs-chaos-serve-")
        token = d / "token"
        token.write_text(os.urandom(12).hex() + "\n")
        token.chmod(0o600)
        srv = CacheServer(self, p, cache_dir=d / "ssd", token_file=token, buckets=SERVE_BUCKET,
                          name="chaos").start()
        m = self.mount(p, f"s3://{SERVE_BUCKET}", args=[
            "--read-only", "--memory-cache-size", "16M", "--cache-server", srv.url,
            "--token-file", str(token)])
        p.set_faults(CHAOS)
        out = Outcomes()
        stop = threading.Event()
        passes = collections.Counter()

        def reader(i: int):
            keys = sorted(SERVE_SET)
            while not stop.is_set():
                for key in keys[i:] + keys[:i]:
                    read_until_right(out, m.path / key, SERVE_SET[key], f"reader {i}: {key}")
                passes[i] += 1

        def wait_for(what: str, cond, within: float):
            deadline = time.monotonic() + within
            while not cond():
                if time.monotonic() > deadline:
                    stop.set()
                    self.fail(f"{what} within {within}s; {out.summary()}\n{m.log_tail()}")
                time.sleep(0.2)

        threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(3)]
        for t in threads:
            t.start()
        try:
            wait_for("reads through the server", lambda: srv.stats()["chunk_requests"] >= 8, 30)
            pid = srv.proc.pid
            os.kill(pid, signal.SIGKILL)
            srv.stop()
            self.assertEqual(harness.wait_gone([pid], 10), [], "cache server survived SIGKILL")
            killed_at = m.stats()["bucket_bytes_read"]
            wait_for("reads falling back to the bucket",
                     lambda: m.stats()["bucket_bytes_read"] >= killed_at + 4 * MiB, 40)
            fell_back = m.stats()["bucket_bytes_read"] - killed_at
            self.restart(srv)
            wait_for("the restarted server used again", lambda: srv.stats()["chunk_requests"] > 0,
                     60)
            after = dict(passes)
            wait_for("a pass of every reader after the restart",
                     lambda: all(passes[i] > after.get(i, 0) for i in range(3)), 60)
        finally:
            stop.set()
            for t in threads:
                t.join(60)
        self.assertFalse(any(t.is_alive() for t in threads), "readers hung")
        self.assert_reads_sound(out, m)
        self.assertEqual(out.failures, [], "a cache server's death surfaced as a failed read")
        log = m.log.read_text(errors="replace")
        self.assertIn(f"cache server {srv.url} failed", log)
        self.assertIn(f"cache server {srv.url} answers again", log)
        injected = sum(p.all_injected().values())
        self.assertGreaterEqual(injected, 1, p.stats())
        ssd.note(f"\nchaos cache server: {out.summary()}; {fell_back / MiB:.1f} MiB from the "
                 f"bucket while it was down, {srv.stats()['chunk_requests']} chunks served "
                 f"after the restart, reader passes {dict(passes)}; proxy "
                 f"{p.stats()['requests']} requests, faults by kind {p.by_kind()}")

    def restart(self, srv: CacheServer) -> None:
        """Start again, as a service manager would: its start-up check of the bucket meets the
        faults too, and a refused start is retried."""
        for attempt in range(3):
            try:
                srv.start()
                return
            except harness.HarnessError as e:
                ssd.note(f"chaos: cache server start {attempt + 1} refused: {e}")
                srv.stop()
        self.fail(f"the cache server did not start again\n{srv.log_text()[-2000:]}")


class SsdDamage(ChaosCase):
    ARGS = ["--read-only", "--memory-cache-size", "16M", "--cache-size", "256M"]

    def test_truncated_and_overwritten_region_file(self):
        d = ssd.temp_dir(self.addCleanup, "warmfs-chaos-ssd-") / "cache"
        args = [*self.ARGS, "--cache-dir", str(d)]
        m1 = self.mount(S3RVER, f"s3://{SSD_BUCKET}", args=args)
        ssd.check_files(self, m1, SSD_SET, "filling the SSD tier")
        ssd.unmount(self, m1)

        regions = sorted(r for r in (d / "regions").iterdir() if r.stat().st_size >= 8 * MiB)
        self.assertTrue(regions, f"no region file of 8 MiB or more in {d / 'regions'}")
        region = regions[0]
        size = region.stat().st_size
        cut = size * 3 // 4 + 12345  # mid-record
        rng = random.Random(3)
        with open(region, "r+b") as f:
            f.truncate(cut)
            for k in (1, 3, 5):
                f.seek(size * k // 10)
                f.write(rng.randbytes(4 * KiB))
            f.flush()
            os.fsync(f.fileno())
        ssd.note(f"\nchaos ssd: {region.name} cut from {size} to {cut} bytes, 4 KiB overwritten "
                 f"at 10%, 30% and 50%")

        p = self.chaos_proxy(S3RVER)
        m2 = self.mount(p, f"s3://{SSD_BUCKET}", args=args)
        p.set_faults(CHAOS)
        ssd.check_files(self, m2, SSD_SET, "after the damage, through the faults")
        s = m2.stats()
        dropped = [int(n) for n in re.findall(r"dropped (\d+) inconsistent entries",
                                              m2.log.read_text(errors="replace"))]
        self.assertTrue(dropped and dropped[-1] > 0,
                        f"the cut region's lost entries were not dropped at start: {dropped}\n"
                        f"{ssd.log_lines(m2, 'recovered')}")
        self.assertGreater(s["corrupt_chunks"], 0, f"overwritten chunks not caught: {s}")
        self.assertGreater(s["disk_hit_bytes"], 0, f"intact chunks not served from SSD: {s}")
        gets = p.stats()["requests_by_method"].get("GET", 0)
        self.assertGreater(gets, 0, p.stats())
        ssd.unmount(self, m2)

        # What was refetched replaced the damage: a third mount finds nothing corrupt.
        m3 = self.mount(S3RVER, f"s3://{SSD_BUCKET}", args=args)
        ssd.check_files(self, m3, SSD_SET, "third mount")
        s3 = m3.stats()
        self.assertEqual(s3["corrupt_chunks"], 0, s3)
        ssd.note(f"chaos ssd: second mount dropped {dropped[-1]} index entries, caught "
                 f"{s['corrupt_chunks']} corrupt chunks, read {s['disk_hit_bytes'] / MiB:.1f} MiB "
                 f"from the SSD and {s['bucket_bytes_read'] / MiB:.1f} MiB in {gets} GETs from "
                 f"the bucket (faults by kind {p.by_kind()}); third mount: corrupt 0, "
                 f"{s3['disk_hit_bytes'] / MiB:.1f} MiB from the SSD")


if __name__ == "__main__":
    unittest.main()
