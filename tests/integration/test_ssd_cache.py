"""The SSD cache tier (--cache-dir): it survives an unmount (a warm restart reads nothing from the
bucket), a kill -9 mid-fill, and flipped bytes in its region files (caught by CRC32C, counted,
refetched); eviction resists scans yet lets a new working set in; concurrent random reads stay
byte-exact while the tier fills and evicts; a replaced object is never served from stale chunks;
one mount per cache dir; a full or read-only cache filesystem degrades to correct reads (or a
clear refusal); prefetch (`warmfs prefetch` and `mount --prefetch`) warms the tiers so later
reads cost no GETs.

Bulk data on s3rver (fast ranges), the replaced-object test on moto with authentication on.
Memory caches are 16M so reads really reach the SSD tier; the kernel page cache is dropped
(/proc/sys/vm/drop_caches, so root) before every pass that must reach warmfs. Cache dirs live in
temp dirs and tmpfs mounts, removed in cleanup; every warmfs mount is unmounted in cleanup.
"""

import errno
import os
import random
import stat
import threading
import time
import unittest

import harness
import ssd_helpers as ssd
from harness import KiB, MiB

MOTO: harness.MotoServer
S3RVER: harness.S3rver

MEM = ["--memory-cache-size", "16M"]
REFUSE_WITHIN = 10.0  # seconds, as in test_cli

# ~151 MiB in 20 files of 1 KiB .. 20 MiB, in two folders (each holds files: s3rver drops
# folders holding only subfolders from listings).
DS_SIZES = [KiB, 4 * KiB + 1, 64 * KiB, MiB - 1, MiB, MiB + 1, 2 * MiB, 3 * MiB + 5, 5 * MiB,
            7 * MiB + 3, 8 * MiB, 9 * MiB + 11, 10 * MiB, 11 * MiB, 12 * MiB + 13, 13 * MiB,
            14 * MiB, 16 * MiB, 18 * MiB + 7, 20 * MiB]
DS = {f"{'a' if i % 2 else 'b'}/f{i:02d}-{n}.bin": harness.make_data(n, seed=1000 + i)
      for i, n in enumerate(DS_SIZES)}
DS_BYTES = sum(len(v) for v in DS.values())

BIG_SIZE = 200 * MiB
CRASH_SMALL = {f"small/s{i}.bin": harness.make_data(3 * MiB + i, seed=2000 + i) for i in range(5)}
BIG: dict[str, bytes] = {}  # "big.bin": 200 MiB of os.urandom, made in setUpModule

SCAN = {f"scan/e{i}.bin": harness.make_data(32 * MiB, seed=3000 + i) for i in range(8)}
SCAN_BYTES = sum(len(v) for v in SCAN.values())

PRE = {f"pre/{d}/p{i}.bin": harness.make_data(4 * MiB + 1000 * i, seed=4000 + i)
       for i, d in enumerate("xyxyxyxyxy")}
PRE_BYTES = sum(len(v) for v in PRE.values())


def setUpModule():
    harness.require("warmfs", "fuse", "moto", "s3rver")
    ssd.require_cache_dir_support()
    global MOTO, S3RVER
    S3RVER = harness.start_server(unittest.addModuleCleanup, harness.S3rver())
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    c = S3RVER.client()
    BIG["big.bin"] = harness.make_data(BIG_SIZE, seed=0)
    for bucket, objects in [("ssd-ds", DS), ("ssd-crash", {**CRASH_SMALL, **BIG}), ("ssd-scan", SCAN),
                            ("ssd-pre", PRE)]:
        harness.create_bucket(c, bucket)
        harness.put_many(c, bucket, objects, threads=4)
    # s3rver leaves a folder that holds only folders (pre/ holds x/ and y/) out of its
    # parent's listing, and warmfs answers the first lookup in a directory from its listing:
    # a marker object makes pre/ visible, as it is on S3 (docs/testing.md).
    c.put_object(Bucket="ssd-pre", Key="pre/", Body=b"")


class SsdCase(harness.WarmfsTestCase):
    timeout = 170.0

    def cache_dir(self) -> "os.PathLike":
        return ssd.temp_dir(self.addCleanup) / "cache"

    def mount_ssd(self, bucket, cache_dir, size="512M", extra=(), server=None):
        server = server or S3RVER
        return self.mount(server, f"s3://{bucket}",
                          args=[*MEM, "--cache-dir", str(cache_dir), "--cache-size", size, *extra])


class WarmRestart(SsdCase):
    def test_warm_restart_reads_nothing_from_the_bucket(self):
        d = self.cache_dir()
        m1 = self.mount_ssd("ssd-ds", d)
        ssd.check_disk_stats(self, m1.stats())
        ssd.check_files(self, m1, DS, "cold pass")
        s1 = m1.stats()
        self.assertGreaterEqual(s1["bucket_bytes_read"], DS_BYTES, s1)
        ssd.unmount(self, m1)

        with self.subTest(what="cache dir layout and permissions"):
            self.check_layout(d)

        m2 = self.mount_ssd("ssd-ds", d)
        ssd.drop_page_cache()
        s0 = m2.stats()
        ssd.check_disk_stats(self, s0)
        ssd.check_files(self, m2, DS, "warm restart")
        s2 = m2.stats()
        ssd.note(f"warm restart: disk_hit_bytes {s2['disk_hit_bytes']}, bucket_bytes_read "
                 f"{s2['bucket_bytes_read']}, GETs {ssd.gets(s2)}, disk_hit_ratio "
                 f"{s2['disk_hit_ratio']:.2f}")
        self.assertEqual(s2["bucket_bytes_read"], 0, f"warm restart read from the bucket: {s2}\n"
                         f"{m2.log_tail()}")
        self.assertEqual(ssd.gets(s2), 0, f"warm restart sent GETs: {s2}")
        self.assertGreaterEqual(s2["disk_hit_bytes"], DS_BYTES,
                                f"not every byte came from the SSD tier: {s2}")
        self.assertGreaterEqual(s2["bytes_read"] - s0["bytes_read"], DS_BYTES, s2)
        run = harness.run_cli(["stats", m2.path], m2.env, timeout=15)
        self.assertEqual(run.rc, 0, run.describe())
        self.assertIn("SSD", run.stdout, f"human-readable stats do not show the SSD tier\n"
                      f"{run.describe()}")

    def check_layout(self, d):
        self.assertEqual(stat.S_IMODE(os.stat(d).st_mode), 0o700, f"{d} mode")
        regions = sorted((d / "regions").iterdir())
        self.assertTrue(regions, f"no region files in {d}/regions")
        for r in regions:
            self.assertRegex(r.name, r"^\d{6}$", f"region file name {r}")
            self.assertLessEqual(r.stat().st_size, 64 * MiB, f"{r} is larger than a region")
        self.assertTrue((d / "lock").is_file(), f"no lock file in {d}")
        self.assertTrue((d / "index").is_dir(), f"no index dir in {d}")
        bad = []
        for dirpath, dirnames, filenames in os.walk(d):
            for name in dirnames:
                p = os.path.join(dirpath, name)
                if stat.S_IMODE(os.lstat(p).st_mode) != 0o700:
                    bad.append(f"{p} {oct(stat.S_IMODE(os.lstat(p).st_mode))} (want 0700)")
            for name in filenames:
                p = os.path.join(dirpath, name)
                if stat.S_IMODE(os.lstat(p).st_mode) != 0o600:
                    bad.append(f"{p} {oct(stat.S_IMODE(os.lstat(p).st_mode))} (want 0600)")
        self.assertEqual(bad, [], "cache dir entries with other modes than 0700/0600")


class Crash(SsdCase):
    def test_kill_9_mid_fill_then_remount(self):
        d = self.cache_dir()
        m1 = self.mount_ssd("ssd-crash", d)
        ssd.check_files(self, m1, CRASH_SMALL, "before the kill")
        pid = ssd.daemon_pid(m1)
        path = m1.path / "big.bin"
        fd = os.open(path, os.O_RDONLY)
        try:
            got = 0
            while got < 96 * MiB:  # about half of it, with read-ahead and SSD writes in flight
                b = os.read(fd, MiB)
                self.assertTrue(b, "EOF before the kill")
                self.assertEqual(b, BIG["big.bin"][got:got + len(b)], f"wrong bytes at {got}")
                got += len(b)
            before = m1.stats()
            os.kill(pid, 9)
            self.assertEqual(harness.wait_gone([pid], 10), [], "daemon survived kill -9")
            # what the kernel read ahead may still come from its page cache; then ENOTCONN, or
            # ECONNABORTED for a request that was in flight when the connection died
            with self.assertRaises(OSError) as cm:
                while os.read(fd, MiB):
                    pass
            self.assertIn(cm.exception.errno, (errno.ENOTCONN, errno.ECONNABORTED), cm.exception)
        finally:
            try:
                os.close(fd)  # the fd goes either way; its FLUSH to a dead daemon may fail
            except OSError as e:
                if e.errno not in (errno.ENOTCONN, errno.ECONNABORTED):
                    raise
        ssd.note(f"kill -9 after {got // MiB} MiB: disk_write_bytes {before['disk_write_bytes']}"
                 f", bytes_read {before['bytes_read']}")
        harness.force_unmount(m1.path)
        self.assertFalse(harness.is_mounted(m1.path), "dead mount could not be removed")
        m1.close()

        m2 = self.mount_ssd("ssd-crash", d)
        ssd.drop_page_cache()
        ssd.check_files(self, m2, {**CRASH_SMALL, **BIG}, "after kill -9 and remount")
        s = m2.stats()
        ssd.note(f"after kill -9 remount: disk_hit_bytes {s['disk_hit_bytes']}, corrupt_chunks "
                 f"{s['corrupt_chunks']}, bucket_bytes_read {s['bucket_bytes_read']}")
        if before["disk_write_bytes"] >= MiB:
            self.assertGreater(s["disk_hit_bytes"], 0,
                               f"{before['disk_write_bytes']} bytes were written to the SSD tier "
                               f"before kill -9, none was used after the remount: {s}\n"
                               f"{m2.log_tail()}")
        # and it keeps working: a second pass over the big file, page cache dropped
        ssd.drop_page_cache()
        ssd.check_files(self, m2, BIG, "second pass after remount")


class Corruption(SsdCase):
    def test_flipped_bytes_in_regions_are_caught_and_refetched(self):
        d = self.cache_dir()
        m1 = self.mount_ssd("ssd-ds", d)
        ssd.check_files(self, m1, DS, "warm pass")
        ssd.unmount(self, m1)
        flipped = {}
        for r in sorted((d / "regions").iterdir()):
            size = r.stat().st_size
            if size < 2 * MiB:
                continue
            offsets = [size * k // 8 for k in range(1, 8)]
            flipped[r.name] = ssd.flip_bytes(r, offsets)
        self.assertTrue(flipped, f"no region file to damage in {d / 'regions'}")
        ssd.note(f"corruption: flipped 64-byte runs per region {flipped}")

        m2 = self.mount_ssd("ssd-ds", d)
        ssd.drop_page_cache()
        ssd.check_files(self, m2, DS, "after flipping bytes")
        s = m2.stats()
        ssd.note(f"corruption: corrupt_chunks {s['corrupt_chunks']}, disk_hit_bytes "
                 f"{s['disk_hit_bytes']}, bucket_bytes_read {s['bucket_bytes_read']}")
        self.assertGreater(s["corrupt_chunks"], 0, f"flipped bytes not detected: {s}\n"
                           f"{ssd.log_lines(m2, 'failed its checks', 'corrupt')}")
        self.assertGreater(ssd.gets(s), 0, f"corrupt chunks were not refetched: {s}")
        self.assertGreater(s["disk_hit_bytes"], 0, f"intact chunks not served from SSD: {s}")
        # the refetched chunks replace the damaged ones: a second pass sees no new corruption
        ssd.drop_page_cache()
        ssd.check_files(self, m2, DS, "second pass")
        s2 = m2.stats()
        self.assertEqual(s2["corrupt_chunks"], s["corrupt_chunks"],
                         f"corrupt chunks served again on a second pass: {s} -> {s2}")


class ScanResistance(SsdCase):
    """128M of SSD (2 regions) under a 16M memory cache, 8 x 32 MiB read in order."""

    EPOCHS = 3
    SHIFT_ROUNDS = 8

    def epoch(self, m, objects, label):
        """Read objects in order, page cache dropped first; returns (SSD hit ratio, deltas)."""
        ssd.drop_page_cache()
        s0 = m.stats()
        size = ssd.check_files(self, m, objects, label)
        s1 = m.stats()
        hit = ssd.delta(s0, s1, "disk_hit_bytes")
        ratio = hit / size
        ssd.note(f"{label}: disk hit ratio {ratio:.2f} (disk_hit_bytes +{hit}, bytes_read "
                 f"+{ssd.delta(s0, s1, 'bytes_read')}, bucket_bytes_read "
                 f"+{ssd.delta(s0, s1, 'bucket_bytes_read')}, disk_write_bytes "
                 f"+{ssd.delta(s0, s1, 'disk_write_bytes')}, evicted_bytes "
                 f"+{ssd.delta(s0, s1, 'evicted_bytes')}, cache_used_bytes "
                 f"{s1['cache_used_bytes']})")
        return ratio, s1

    def test_repeated_scan_of_twice_the_cache(self):
        m = self.mount_ssd("ssd-scan", self.cache_dir(), size="128M")
        ratios = [self.epoch(m, SCAN, f"scan epoch {e}")[0] for e in range(1, self.EPOCHS + 1)]
        s = m.stats()
        self.assertEqual(s["cache_capacity_bytes"], 128 * MiB, s)
        self.assertLessEqual(s["cache_used_bytes"], s["cache_capacity_bytes"] + 64 * MiB, s)
        for epoch in range(2, self.EPOCHS + 1):
            self.assertGreaterEqual(ratios[epoch - 1], 0.25,
                                    f"epoch {epoch}: SSD hit ratio {ratios[epoch - 1]:.2f} on a "
                                    f"scan of twice the cache (LRU gives 0); all: "
                                    f"{[round(r, 2) for r in ratios]}; {s}")

    def test_new_working_set_that_fits_replaces_the_old(self):
        """Scan resistance must not freeze the cache: after the scans, a new working set of
        96 MiB (3 files never cached, read again and again) fits the 128M cache and should be
        served from it within a few rounds, evicting the old set."""
        m = self.mount_ssd("ssd-scan", self.cache_dir(), size="128M")
        for e in range(1, self.EPOCHS + 1):
            self.epoch(m, SCAN, f"shift: scan epoch {e}")
        new_set = {k: SCAN[k] for k in ["scan/e4.bin", "scan/e5.bin", "scan/e6.bin"]}
        ratios = []
        for r in range(1, self.SHIFT_ROUNDS + 1):
            ratio, s = self.epoch(m, new_set, f"shift: round {r} over 96 MiB")
            ratios.append(round(ratio, 2))
        self.assertGreaterEqual(ratios[-1], 0.9,
                                f"a 96 MiB working set read {self.SHIFT_ROUNDS} times in a row "
                                f"is not held by a 128M SSD cache: per-round hit ratios "
                                f"{ratios}; cache_used_bytes {s['cache_used_bytes']} of "
                                f"{s['cache_capacity_bytes']}; {s}")


class Concurrent(SsdCase):
    def test_threads_random_reads_while_writing_and_evicting(self):
        """8 threads pread random ranges of a dataset larger than the SSD cache (151 MiB in
        128M) while the writer fills and evicts; three rounds, page cache dropped each time."""
        m = self.mount_ssd("ssd-ds", self.cache_dir(), size="128M")
        keys = list(DS)
        errors: list[str] = []
        for rnd in range(3):
            ssd.drop_page_cache()

            def reader(i):
                rng = random.Random(rnd * 100 + i)
                try:
                    fds = {}
                    for _ in range(120):
                        key = rng.choice(keys)
                        data = DS[key]
                        off = rng.randrange(len(data))
                        length = rng.choice([4096, 131_072, MiB, 3 * MiB + 7])
                        fd = fds.get(key)
                        if fd is None:
                            fd = fds[key] = os.open(m.path / key, os.O_RDONLY)
                        got = os.pread(fd, length, off)
                        if got != data[off:off + length]:
                            errors.append(f"round {rnd} thread {i}: {key} pread({off}, "
                                          f"{length}) wrong ({len(got)} bytes)")
                            return
                    for fd in fds.values():
                        os.close(fd)
                except Exception as e:  # reported below
                    errors.append(f"round {rnd} thread {i}: {type(e).__name__}: {e}")

            threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            self.assertFalse(any(t.is_alive() for t in threads), "reader threads hung")
            self.assertEqual(errors, [], m.log_tail())
        ssd.drop_page_cache()
        ssd.check_files(self, m, DS, "sequential pass after the random rounds")
        s = m.stats()
        ssd.note(f"concurrent: disk_hit_bytes {s['disk_hit_bytes']}, disk_write_bytes "
                 f"{s['disk_write_bytes']}, evicted_bytes {s['evicted_bytes']}, corrupt_chunks "
                 f"{s['corrupt_chunks']}, disk_errors {s['disk_errors']}")
        self.assertGreater(s["disk_hit_bytes"], 0, s)
        self.assertEqual(s["corrupt_chunks"], 0, f"corruption without damage: {s}")
        self.assertEqual(s["disk_errors"], 0, s)
        self.assertLessEqual(s["cache_used_bytes"], s["cache_capacity_bytes"] + 64 * MiB, s)


class Replaced(SsdCase):
    """On moto with authentication on; --metadata-ttl 1; checks 2.5 s after a change."""

    AFTER_TTL = 2.5

    def test_replaced_object_never_served_from_stale_ssd_chunks(self):
        c = MOTO.client()
        harness.create_bucket(c, "ssd-replaced")
        size = 3 * MiB + 17
        old = {"while-unmounted.bin": harness.make_data(size, 51),
               "while-mounted.bin": harness.make_data(size, 52)}
        new = {"while-unmounted.bin": harness.make_data(size, 61),
               "while-mounted.bin": harness.make_data(size, 62)}
        harness.put_many(c, "ssd-replaced", old)
        d = self.cache_dir()
        args = ["--metadata-ttl", "1"]
        m1 = self.mount_ssd("ssd-replaced", d, extra=args, server=MOTO)
        ssd.check_files(self, m1, old, "first read")
        ssd.unmount(self, m1)

        # replaced while no mount runs: the next mount must not serve the SSD's old chunks
        harness.put_object(c, "ssd-replaced", "while-unmounted.bin", new["while-unmounted.bin"])
        m2 = self.mount_ssd("ssd-replaced", d, extra=args, server=MOTO)
        ssd.drop_page_cache()
        ssd.check_files(self, m2, {"while-mounted.bin": old["while-mounted.bin"]}, "warm")
        s = m2.stats()
        self.assertGreaterEqual(s["disk_hit_bytes"], size, f"old object not read from SSD: {s}")
        ssd.check_files(self, m2, {"while-unmounted.bin": new["while-unmounted.bin"]},
                        "replaced while unmounted")

        # replaced while mounted, its old chunks in memory and on SSD
        harness.put_object(c, "ssd-replaced", "while-mounted.bin", new["while-mounted.bin"])
        time.sleep(self.AFTER_TTL)
        ssd.check_files(self, m2, {"while-mounted.bin": new["while-mounted.bin"]},
                        "replaced while mounted")
        ssd.unmount(self, m2)

        # and a restart on the same cache serves the new bytes of both
        m3 = self.mount_ssd("ssd-replaced", d, extra=args, server=MOTO)
        ssd.drop_page_cache()
        ssd.check_files(self, m3, new, "after restart")


class Lock(SsdCase):
    def refused(self, args):
        """Run a mount that must be refused; returns its one output line."""
        m = harness.Mount(S3RVER, "s3://ssd-ds", args=args, name=self._testMethodName + "-refused")
        self.addCleanup(m.close)
        run = harness.run_cli(m.args, m.env, timeout=30)
        lines = self.assert_refused(run, m.path, REFUSE_WITHIN)
        self.assertTrue(lines[0].startswith("warmfs: "), run.describe())
        return run, lines[0]

    def test_second_mount_on_the_same_cache_dir_is_refused(self):
        d = self.cache_dir()
        a = self.mount_ssd("ssd-ds", d)
        pid = ssd.daemon_pid(a)
        run, line = self.refused([*MEM, "--cache-dir", str(d), "--cache-size", "512M"])
        self.assertIn("in use", line, run.describe())
        self.assertRegex(line, rf"\b{pid}\b", f"the message does not name pid {pid}\n"
                         f"{run.describe()}")
        self.assertIn(str(d), line, run.describe())
        self.assertTrue(harness.is_mounted(a.path), "mount A went away")
        # A is unaffected, and once A is gone the dir is free again
        key = "a/f01-4097.bin"
        ssd.check_files(self, a, {key: DS[key]}, "mount A after the refusal")
        ssd.unmount(self, a)
        b = self.mount_ssd("ssd-ds", d)
        ssd.check_files(self, b, {key: DS[key]}, "mount B after A unmounted")

    def test_cache_size_below_one_region_is_refused(self):
        d = self.cache_dir()
        run, line = self.refused([*MEM, "--cache-dir", str(d), "--cache-size", "32M"])
        self.assertRegex(line, r"(?i)cache-size|64", run.describe())

    def test_cache_size_without_cache_dir_is_a_usage_error(self):
        m = harness.Mount(S3RVER, "s3://ssd-ds", args=["--cache-size", "1G"], name="no-dir")
        self.addCleanup(m.close)
        run = harness.run_cli(m.args, m.env, timeout=15)
        self.assertEqual(run.rc, 2, run.describe())
        self.assertIn("--cache-dir", run.stderr, run.describe())
        self.assertFalse(harness.is_mounted(m.path))


class FullOrReadOnlyCacheFs(SsdCase):
    def test_cache_filesystem_fills_up(self):
        tmp = ssd.temp_dir(self.addCleanup)
        fsdir = ssd.mount_tmpfs(self.addCleanup, tmp / "tmpfs", "80m")
        d = fsdir / "cache"
        m = self.mount_ssd("ssd-crash", d, size="256M")
        data = {**BIG, **CRASH_SMALL}  # ~215 MiB, most of it before the SSD is full
        ssd.check_files(self, m, data, "filling an 80 MiB tmpfs")
        s = m.stats()
        ssd.note(f"full cache fs: disk_errors {s['disk_errors']}, disk_write_bytes "
                 f"{s['disk_write_bytes']}, dropped_writes {s.get('dropped_writes', '(absent)')}"
                 f", cache_used_bytes {s['cache_used_bytes']}")
        self.assertTrue(harness.is_mounted(m.path))
        # the mount keeps working, and a second pass is still right
        ssd.drop_page_cache()
        ssd.check_files(self, m, data, "second pass on a full cache fs")
        s = m.stats()
        self.assertGreater(s["disk_errors"] + s.get("dropped_writes", 0), 0,
                           f"writing ~215 MiB to an 80 MiB cache filesystem counted no disk "
                           f"error or dropped write: {s}\n{ssd.log_lines(m, 'ssd cache')}")
        self.assertGreater(s["disk_write_bytes"], 0, f"nothing was written to the SSD tier: {s}")
        self.assertLessEqual(s["cache_used_bytes"], 80 * MiB,
                             f"the tier claims to hold more than its 80 MiB filesystem: {s}")

    def test_read_only_cache_dir(self):
        tmp = ssd.temp_dir(self.addCleanup)
        d = ssd.mount_tmpfs(self.addCleanup, tmp / "ro", "16m", read_only=True)
        m = harness.Mount(S3RVER, "s3://ssd-ds", name=self._testMethodName,
                          args=[*MEM, "--cache-dir", str(d), "--cache-size", "128M"])
        self.addCleanup(m.close)
        run = harness.run_cli(m.args, m.env, timeout=30)
        if run.rc != 0:
            ssd.note(f"read-only cache dir: refused: {run.stderr.strip()!r}")
            self.assertEqual(harness.wait_gone(harness.daemon_pids(m.path), 10), [], run.describe())
            self.assertFalse(harness.is_mounted(m.path), f"a mount was left\n{run.describe()}")
            self.assertLess(run.seconds, REFUSE_WITHIN, run.describe())
            lines = [ln for ln in (run.stdout + run.stderr).splitlines() if ln.strip()]
            self.assertEqual(len(lines), 1, f"want exactly one line\n{run.describe()}")
            self.assertTrue(lines[0].startswith("warmfs: "), run.describe())
            self.assertRegex(lines[0], r"(?i)read-only|not writable|EROFS|cannot create|"
                             r"permission", run.describe())
            self.assertIn(str(d), lines[0], run.describe())
        else:
            ssd.note("read-only cache dir: mounted (memory only)")
            self.assertTrue(harness.is_mounted(m.path), f"exit 0 but no mount\n{run.describe()}")
            ssd.check_files(self, m, DS, "read-only cache dir")
            ssd.drop_page_cache()
            ssd.check_files(self, m, DS, "read-only cache dir, second pass")
            self.assertEqual(os.listdir(d), [], "something was written to a read-only dir?")


class Prefetch(SsdCase):
    def test_prefetch_command_then_reads_cost_no_gets(self):
        d = self.cache_dir()
        m = self.mount_ssd("ssd-pre", d)
        run = harness.run_cli(["prefetch", m.path, "pre"], m.env, timeout=120)
        self.assertEqual(run.rc, 0, f"{run.describe()}\n{m.log_tail()}")
        s1 = m.stats()
        self.assertGreaterEqual(s1["bucket_bytes_read"], PRE_BYTES, s1)
        ssd.drop_page_cache()
        ssd.check_files(self, m, PRE, "after warmfs prefetch")
        s2 = m.stats()
        ssd.note(f"prefetch: GETs {ssd.gets(s1)} -> {ssd.gets(s2)}, disk_hit_bytes "
                 f"+{ssd.delta(s1, s2, 'disk_hit_bytes')}, memory_hit_bytes "
                 f"+{ssd.delta(s1, s2, 'memory_hit_bytes')}")
        self.assertEqual(ssd.gets(s2), ssd.gets(s1), f"reads after prefetch sent GETs: "
                         f"{s1} -> {s2}")
        self.assertEqual(s2["bucket_bytes_read"], s1["bucket_bytes_read"], s2)
        self.assertGreater(ssd.delta(s1, s2, "disk_hit_bytes"), 0,
                           f"a 16M memory cache cannot hold {PRE_BYTES} bytes; the SSD "
                           f"tier served none: {s1} -> {s2}")
        with self.subTest(what="missing path"):
            run = harness.run_cli(["prefetch", m.path, "pre/no-such-dir"], m.env, timeout=30)
            self.assertNotEqual(run.rc, 0, run.describe())
            self.assertIn("no-such-dir", run.stderr, run.describe())

    def test_mount_prefetch_option(self):
        d = self.cache_dir()
        m = self.mount_ssd("ssd-pre", d, extra=["--prefetch", "pre/x,pre/y"])
        deadline = time.monotonic() + 60
        s1 = m.stats()
        while s1["bytes_read"] < PRE_BYTES:
            if time.monotonic() > deadline:
                self.fail(f"--prefetch warmed {s1['bytes_read']} of {PRE_BYTES} bytes in 60 s:"
                          f" {s1}\n{ssd.log_lines(m, 'prefetch')}")
            time.sleep(0.2)
            s1 = m.stats()
        # The prefetcher says when it is done (its last file's reads have all returned).
        while not any("prefetch: " in line and " files, " in line
                      for line in m.log.read_text(errors="replace").splitlines()):
            if time.monotonic() > deadline:
                self.fail(f"--prefetch did not finish in 60 s: {ssd.log_lines(m, 'prefetch')}")
            time.sleep(0.1)
        s1 = m.stats()
        ssd.drop_page_cache()
        ssd.check_files(self, m, PRE, "after --prefetch")
        s2 = m.stats()
        ssd.note(f"--prefetch: GETs {ssd.gets(s1)} -> {ssd.gets(s2)}, bucket_bytes_read "
                 f"{s1['bucket_bytes_read']} -> {s2['bucket_bytes_read']}")
        self.assertEqual(s2["bucket_bytes_read"], s1["bucket_bytes_read"],
                         f"reads after --prefetch went to the bucket: {s1} -> {s2}")
        self.assertEqual(ssd.gets(s2), ssd.gets(s1), f"{s1} -> {s2}")


if __name__ == "__main__":
    unittest.main()
