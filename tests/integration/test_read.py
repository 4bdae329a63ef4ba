"""Reads are byte-exact: sha256sum of objects from 0 bytes to 300 MiB, pread at random offsets and
lengths across 1 MiB chunk boundaries and at EOF, 16 concurrent readers (threads and processes).

Small and medium objects on moto with authentication on (every range GET is SigV4-checked); the
300 MiB object on s3rver, which serves ranges from a file (moto copies the whole object per range).
"""

import os
import random
import subprocess
import sys
import threading
import unittest

import harness
from harness import KiB, MiB

MOTO: harness.MotoServer
S3RVER: harness.S3rver

SIZES = [0, 1, 4095, 4096, 65_537, MiB - 1, MiB, MiB + 1, 2 * MiB, 8 * MiB + 7, 33 * MiB + 123]
PREAD_SIZE = 9 * MiB + 12_345
CONCURRENT_SIZE = 12 * MiB + 777
BIG_SIZE = 300 * MiB


def setUpModule():
    harness.require("warmfs", "fuse", "moto", "s3rver")
    global MOTO, S3RVER
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    S3RVER = harness.start_server(unittest.addModuleCleanup, harness.S3rver())


def sha256sum(path) -> str:
    run = subprocess.run(["sha256sum", str(path)], capture_output=True, timeout=180,
                         env={"PATH": harness.BASE_PATH})
    if run.returncode != 0:
        raise AssertionError(f"sha256sum {path} exited {run.returncode}: {run.stderr!r}")
    return run.stdout.split()[0].decode()


class Checksums(harness.WarmfsTestCase):
    timeout = 150.0

    def test_sizes_on_moto(self):
        c = MOTO.client()
        harness.create_bucket(c, "sizes")
        objects = {f"obj-{n:09d}.bin": harness.make_data(n, seed=n) for n in SIZES}
        harness.put_many(c, "sizes", objects, threads=4)
        m = self.mount(MOTO, "s3://sizes")
        for key, data in objects.items():
            with self.subTest(key=key, size=len(data)):
                self.assertEqual(os.stat(m.path / key).st_size, len(data))
                self.assertEqual(sha256sum(m.path / key), harness.sha256(data),
                                 m.log_tail())

    def test_300mib_and_small_on_s3rver(self):
        c = S3RVER.client()
        harness.create_bucket(c, "big")
        objects = {"small/zero.bin": b"", "small/one.bin": b"\x07",
                   "small/chunk-plus-one.bin": harness.make_data(MiB + 1, 5)}
        harness.put_many(c, "big", objects)
        big = harness.make_data(BIG_SIZE, 0)
        harness.put_object(c, "big", "shards/big-300MiB.bin", big, timeout=120)
        m = self.mount(S3RVER, "s3://big")
        for key, data in objects.items():
            with self.subTest(key=key):
                self.assertEqual(sha256sum(m.path / key), harness.sha256(data))
        path = m.path / "shards/big-300MiB.bin"
        self.assertEqual(os.stat(path).st_size, BIG_SIZE)
        self.assertEqual(sha256sum(path), harness.sha256(big), m.log_tail())


class Pread(harness.WarmfsTestCase):
    def test_random_offsets_across_chunk_boundaries_and_eof(self):
        seed = 20240611
        rng = random.Random(seed)
        data = harness.make_data(PREAD_SIZE, seed)
        c = MOTO.client()
        harness.create_bucket(c, "pread")
        harness.put_object(c, "pread", "obj.bin", data)
        m = self.mount(MOTO, "s3://pread")
        size = len(data)
        cases = [(0, 1), (0, size), (MiB - 1, 2), (MiB, MiB), (MiB - 1, MiB + 2), (8 * MiB, 2 * MiB),
                 (size - 1, 1), (size - 1, 100), (size - 10, 10), (size - 4096, 8192),
                 (size, 1), (size, MiB), (size + 12345, 10), (2 * size, 1)]
        for boundary in range(MiB, size, MiB):
            for _ in range(5):
                cases.append((boundary - rng.randint(1, 70_000), rng.randint(1, 3 * MiB)))
            cases.append((boundary, rng.randint(1, 4 * KiB)))
            cases.append((boundary - 1, 2))
        for _ in range(150):
            cases.append((rng.randrange(size), rng.choice([1, 7, 4096, 65536, 131_073,
                                                           rng.randint(1, 2 * MiB)])))
        rng.shuffle(cases)
        fd = os.open(m.path / "obj.bin", os.O_RDONLY)
        self.addCleanup(os.close, fd)
        for off, length in cases:
            got = os.pread(fd, length, off)
            want = data[off:off + length]
            if got != want:
                first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                             min(len(got), len(want)))
                self.fail(f"pread(offset={off}, length={length}) on a {size}-byte object "
                          f"(seed {seed}): got {len(got)} bytes, want {len(want)}; first "
                          f"difference at +{first}\n{m.log_tail()}")


READER = r"""
import hashlib, os, random, sys
path, bs, order_seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
size = os.stat(path).st_size
fd = os.open(path, os.O_RDONLY)
buf = bytearray(size)
offsets = list(range(0, size, bs))
if order_seed:
    random.Random(order_seed).shuffle(offsets)
for off in offsets:
    chunk = os.pread(fd, bs, off)
    want = min(bs, size - off)
    if len(chunk) != want:
        sys.exit(f"short read at {off}: {len(chunk)} of {want}")
    buf[off:off + want] = chunk
if os.pread(fd, 10, size) != b"":
    sys.exit("data past EOF")
print(hashlib.sha256(buf).hexdigest())
"""

BLOCK_SIZES = [4096, 65536, 131_072, MiB, MiB + 3, 3 * MiB - 5, 500_000, 32 * KiB]


class Concurrent(harness.WarmfsTestCase):
    timeout = 120.0

    @classmethod
    def setUpClass(cls):
        c = MOTO.client()
        harness.create_bucket(c, "concurrent")
        cls.data = {k: harness.make_data(CONCURRENT_SIZE, seed=i + 100)
                    for i, k in enumerate(["threads.bin", "procs.bin"])}
        harness.put_many(c, "concurrent", cls.data)
        cls.m = harness.mount(cls.addClassCleanup, MOTO, "s3://concurrent", name="concurrent")

    def test_16_threads_cold(self):
        path = self.m.path / "threads.bin"
        data = self.data["threads.bin"]
        want = harness.sha256(data)
        barrier = threading.Barrier(16, timeout=30)
        shared_fd = os.open(path, os.O_RDONLY)
        self.addCleanup(os.close, shared_fd)
        results: dict[int, str] = {}

        def reader(i):
            try:
                bs = BLOCK_SIZES[i % len(BLOCK_SIZES)]
                offsets = list(range(0, len(data), bs))
                if i % 2:
                    random.Random(i).shuffle(offsets)
                fd = shared_fd if i % 4 == 3 else os.open(path, os.O_RDONLY)
                try:
                    barrier.wait()
                    buf = bytearray(len(data))
                    for off in offsets:
                        chunk = os.pread(fd, bs, off)
                        if chunk != data[off:off + bs]:
                            results[i] = f"wrong bytes at offset {off} (block {bs})"
                            return
                        buf[off:off + len(chunk)] = chunk
                    results[i] = "ok" if harness.sha256(buf) == want else "sha256 differs"
                finally:
                    if fd != shared_fd:
                        os.close(fd)
            except Exception as e:  # reported below, per thread
                results[i] = f"{type(e).__name__}: {e}"

        threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(100)
        bad = {i: r for i, r in sorted(results.items()) if r != "ok"}
        self.assertEqual(len(results), 16, "some reader threads never finished")
        self.assertEqual(bad, {}, self.m.log_tail())

    def test_16_processes_cold(self):
        path = self.m.path / "procs.bin"
        want = harness.sha256(self.data["procs.bin"])
        env = {"PATH": harness.BASE_PATH, "LANG": "C.UTF-8"}
        procs = [subprocess.Popen([sys.executable, "-c", READER, str(path),
                                   str(BLOCK_SIZES[i % len(BLOCK_SIZES)]), str(i % 2 * (i + 1))],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for i in range(16)]
        bad = {}
        for i, p in enumerate(procs):
            try:
                out, err = p.communicate(timeout=100)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                bad[i] = "timed out"
                continue
            if p.returncode != 0 or out.decode().strip() != want:
                bad[i] = f"exit {p.returncode}, out {out.decode().strip()!r}, err {err[-300:]!r}"
        self.assertEqual(bad, {}, self.m.log_tail())


if __name__ == "__main__":
    unittest.main()
