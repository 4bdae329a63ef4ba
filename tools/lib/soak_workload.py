"""The operations tools/soak runs through a mount, each checked as it goes, and what they saw.

Workers share a read-only dataset (read whole and by pread) and each owns a directory of its
own files, which it writes (fsync, then the bucket is checked with boto3), renames, deletes,
lists and reads back; a shadow of its directory (size, seed and sha256 of each file) says what
the mount and the bucket must hold. A failed call is retried as an application would; it
must fail with EIO, and the state it leaves must be one of the two the call allows. Anything
else is a violation, which tools/soak reports and turns into a non-zero exit.

Thread safety: one Worker per thread; Tally is shared and locked.
"""

from __future__ import annotations

import collections
import errno
import hashlib
import os
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import warmfs_harness as harness

KiB = 1024
MiB = 1024 * KiB
TRIES = 6              # attempts of one operation before it counts as never completed
MAX_OWN_FILES = 12     # files in a worker's directory


def data_of(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Tally:
    """Counts of operations, bytes checked, failures surfaced (by errno) and violations."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # protects everything below
        self.ops: collections.Counter = collections.Counter()
        self.failed: collections.Counter = collections.Counter()  # (op, errno name)
        self.bytes_read = 0
        self.bytes_written = 0
        self.violations: list[str] = []
        self.slowest: dict[str, float] = collections.defaultdict(float)
        self.in_flight: dict[int, tuple[str, float]] = {}  # thread id -> (op, start)

    def begin(self, op: str) -> None:
        with self.lock:
            self.in_flight[threading.get_ident()] = (op, time.monotonic())

    def end(self, op: str) -> None:
        with self.lock:
            _, start = self.in_flight.pop(threading.get_ident(), (op, time.monotonic()))
            self.ops[op] += 1
            self.slowest[op] = max(self.slowest[op], time.monotonic() - start)

    def abandon(self) -> None:
        """The calling thread's operation ended by an exception: no longer in flight."""
        with self.lock:
            self.in_flight.pop(threading.get_ident(), None)

    def failure(self, op: str, e: OSError) -> None:
        with self.lock:
            self.failed[(op, errno.errorcode.get(e.errno, str(e.errno)))] += 1
        if e.errno != errno.EIO:
            self.violation(f"{op}: failed with {e!r}, not EIO")

    def violation(self, text: str) -> None:
        with self.lock:
            self.violations.append(f"{time.strftime('%H:%M:%S')} {text}")

    def add_read(self, n: int) -> None:
        with self.lock:
            self.bytes_read += n

    def add_written(self, n: int) -> None:
        with self.lock:
            self.bytes_written += n

    def oldest_in_flight(self) -> tuple[str, float] | None:
        """The operation running longest now, and for how many seconds."""
        with self.lock:
            if not self.in_flight:
                return None
            op, start = min(self.in_flight.values(), key=lambda v: v[1])
        return op, time.monotonic() - start


@dataclass
class Shadow:
    size: int
    seed: int
    sha: str


read_whole = harness.read_uncached


def pick_size(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.6:
        return rng.randrange(0, 256 * KiB)
    if r < 0.9:
        return rng.randrange(MiB, 6 * MiB)
    return rng.randrange(8 * MiB, 20 * MiB)  # multipart (8 MiB parts)


class Worker:
    """One thread's operations. `dataset` maps a path relative to the mount to its bytes;
    `client` is a boto3 client straight to the S3 server (not through the proxy)."""

    WEIGHTS = {"read_dataset": 38, "read_own": 14, "write": 20, "rename": 8, "delete": 7,
               "list": 13}

    def __init__(self, n: int, mount: Path, bucket: str, prefix: str, dataset: dict[str, bytes],
                 client, tally: Tally, seed: int) -> None:
        self.n = n
        self.dir = mount / f"w{n}"
        self.bucket = bucket
        self.key_prefix = f"{prefix}w{n}/"
        self.dataset = dataset
        self.client = client
        self.tally = tally
        self.rng = random.Random(seed)
        self.files: dict[str, Shadow] = {}
        self.names = 0

    # -- the bucket, independently of warmfs

    def bucket_bytes(self, name: str) -> bytes | None:
        try:
            return self.client.get_object(Bucket=self.bucket,
                                          Key=self.key_prefix + name)["Body"].read()
        except self.client.exceptions.NoSuchKey:
            return None

    def bucket_has(self, name: str, want: Shadow | None) -> bool:
        got = self.bucket_bytes(name)
        return got is None if want is None else (got is not None and sha(got) == want.sha)

    # -- the loop

    def setup(self) -> None:
        self.dir.mkdir()

    def step(self) -> None:
        ops = list(self.WEIGHTS)
        op = self.rng.choices(ops, weights=[self.WEIGHTS[o] for o in ops])[0]
        if op in ("read_own", "rename", "delete") and not self.files:
            op = "write"
        if op == "write" and len(self.files) >= MAX_OWN_FILES and self.rng.random() < 0.5:
            op = "delete"
        self.tally.begin(op)
        getattr(self, op)()
        self.tally.end(op)

    def retry(self, op: str, call) -> bool:
        """Run call() until it returns without OSError; False after TRIES failures."""
        for _ in range(TRIES):
            try:
                call()
                return True
            except OSError as e:
                self.tally.failure(op, e)
        self.tally.violation(f"worker {self.n}: {op} never completed in {TRIES} attempts")
        return False

    # -- operations

    def read_dataset(self) -> None:
        key = self.rng.choice(sorted(self.dataset))
        data = self.dataset[key]
        path = self.dir.parent / key
        if self.rng.random() < 0.4:
            def whole():
                got = read_whole(path)
                if got != data:
                    self.tally.violation(f"WRONG BYTES: {key}: {len(got)} bytes read")
                self.tally.add_read(len(got))
            self.retry("read_dataset", whole)
            return
        off = self.rng.randrange(max(1, len(data)))
        length = self.rng.choice([4 * KiB, 64 * KiB, MiB, 3 * MiB])

        def pread():
            fd = os.open(path, os.O_RDONLY)
            try:
                got = os.pread(fd, length, off)
            finally:
                os.close(fd)
            if got != data[off:off + length]:
                self.tally.violation(f"WRONG BYTES: {key} pread({off}, {length})")
            self.tally.add_read(len(got))
        self.retry("read_dataset", pread)

    def read_own(self) -> None:
        name = self.rng.choice(sorted(self.files))
        want = self.files[name]

        def read():
            got = read_whole(self.dir / name)
            if sha(got) != want.sha:
                self.tally.violation(f"WRONG BYTES: w{self.n}/{name}: {len(got)} bytes, "
                                     f"expected {want.size}")
            self.tally.add_read(len(got))
        self.retry("read_own", read)

    def write(self) -> None:
        """Create or overwrite, fsync (the bucket must hold the bytes when it returns 0), close;
        a failed attempt is done again from the start, as a program saving a file would."""
        if self.files and self.rng.random() < 0.3:
            name = self.rng.choice(sorted(self.files))
        else:
            self.names += 1
            name = f"f{self.names:05d}"
        size, seed = pick_size(self.rng), self.rng.randrange(1 << 30)
        data = data_of(size, seed)
        want = Shadow(size, seed, sha(data))
        old = self.files.get(name)

        def attempt():
            fd = os.open(self.dir / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view[:4 * MiB]):]
                os.fsync(fd)
                if not self.bucket_has(name, want):
                    self.tally.violation(f"LOST WRITE: w{self.n}/{name}: fsync returned 0, the "
                                         f"bucket does not hold its {size} bytes")
            finally:
                os.close(fd)

        if self.retry("write", attempt):
            self.files[name] = want
            self.tally.add_written(size)
        else:  # the mount may hold either version; find out which, so later checks hold
            self.files[name] = want if self.bucket_has(name, want) else old
            if self.files[name] is None:
                del self.files[name]

    def rename(self) -> None:
        src = self.rng.choice(sorted(self.files))
        if len(self.files) > 1 and self.rng.random() < 0.5:
            dst = self.rng.choice(sorted(n for n in self.files if n != src))  # replace
        else:
            self.names += 1
            dst = f"f{self.names:05d}"
        moving, replaced = self.files[src], self.files.get(dst)

        def call():
            try:
                os.rename(self.dir / src, self.dir / dst)
            except OSError as e:
                # An earlier attempt that failed may have finished the move after all.
                if e.errno == errno.ENOENT and self.bucket_has(src, None) and \
                        self.bucket_has(dst, moving):
                    return
                got = self.bucket_bytes(dst)
                allowed = {moving.sha} | ({replaced.sha} if replaced else set())
                if got is not None and sha(got) not in allowed:
                    self.tally.violation(f"rename w{self.n}/{src} -> {dst} failed and left "
                                         f"other bytes at {dst}")
                raise

        if self.retry("rename", call):
            del self.files[src]
            self.files[dst] = moving
            if not (self.bucket_has(dst, moving) and self.bucket_has(src, None)):
                self.tally.violation(f"rename w{self.n}/{src} -> {dst} returned 0, the bucket "
                                     f"does not show it")

    def delete(self) -> None:
        name = self.rng.choice(sorted(self.files))

        def call():
            try:
                os.unlink(self.dir / name)
            except FileNotFoundError:
                if not self.bucket_has(name, None):
                    raise
        if self.retry("delete", call):
            del self.files[name]
            if not self.bucket_has(name, None):
                self.tally.violation(f"unlink w{self.n}/{name} returned 0, the key is still "
                                     f"in the bucket")

    def list(self) -> None:
        def call():
            if self.rng.random() < 0.2:
                top = sorted(os.listdir(self.dir.parent))
                if "data" not in top or f"w{self.n}" not in top:
                    self.tally.violation(f"listing of the mount's root misses entries: {top}")
                return
            got = sorted(os.listdir(self.dir))
            if got != sorted(self.files):
                self.tally.violation(f"listing of w{self.n} is {got}, expected "
                                     f"{sorted(self.files)}")
        self.retry("list", call)

    # -- the end

    def verify(self) -> int:
        """Every file of the shadow, read through the mount and from the bucket, and the
        bucket's keys under this worker's prefix; returns the bytes checked."""
        checked = 0
        for name, want in sorted(self.files.items()):
            got = read_whole(self.dir / name)
            if sha(got) != want.sha:
                self.tally.violation(f"final check: w{self.n}/{name} reads other bytes")
            if not self.bucket_has(name, want):
                self.tally.violation(f"final check: the bucket does not hold w{self.n}/{name}")
            checked += 2 * want.size
        keys = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.key_prefix):
            keys += [o["Key"][len(self.key_prefix):] for o in page.get("Contents", [])]
        if sorted(k for k in keys if k) != sorted(self.files):
            self.tally.violation(f"final check: the bucket holds {sorted(keys)} under "
                                 f"{self.key_prefix}, expected {sorted(self.files)}")
        return checked
