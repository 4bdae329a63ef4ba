"""The listing index (docs/ssd-cache.md, "Listing index"): with --cache-dir, a second mount of
the same prefix answers `ls -lR` of a tree of 3,000 keys from the listings the first mount
kept, with no LIST or HEAD (counted by warmfs stats and, independently, by a proxy between
warmfs and moto); what it writes drops the entries of the directories it changes; a mount
with a short --metadata-ttl serves the indexed listings at once and shows the bucket's
changes (made with boto3) once it has listed them again in the background. `warmfs snapshot`
of a mount whose index holds the whole tree takes the snapshot from it, with no LIST.

moto with authentication: it pages ListObjectsV2 (directories of over 1,000 entries are two
pages) as S3 does.
"""

import re
import subprocess
import time
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import harness
import ssd_helpers as ssd

BUCKET = "lindex"
PREFIX = "tree/"
# 10 x 10 directories of 29 files, and one directory of 1,100 (two pages): 4,000 keys.
KEYS = {f"{PREFIX}d{a}/e{b}/f{c:03d}.txt": f"{a}{b}{c}".encode() * (c + 1)
        for a in range(10) for b in range(10) for c in range(29)}
KEYS.update({f"{PREFIX}wide/w{i:05d}": b"w" * (i % 7) for i in range(1100)})
# And an empty directory: its marker object alone.
EMPTY_DIR = f"{PREFIX}empty/"
DIRS = 1 + 10 + 100 + 1 + 1  # the root, d*, d*/e*, wide, empty
MOTO: harness.MotoServer
PROXY: harness.S3Proxy


def setUpModule():
    harness.require("warmfs", "fuse", "moto")
    ssd.require_cache_dir_support()
    global MOTO, PROXY
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    # Every mount goes through the proxy (the index is per endpoint, bucket and prefix).
    PROXY = harness.start_server(unittest.addModuleCleanup, harness.S3Proxy(MOTO))
    c = MOTO.client()
    harness.create_bucket(c, BUCKET)
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda kv: c.put_object(Bucket=BUCKET, Key=kv[0], Body=kv[1]),
                      KEYS.items()))
    c.put_object(Bucket=BUCKET, Key=EMPTY_DIR, Body=b"")


def ls_lr(root: Path) -> str:
    """`ls -lR` of the mount, with directories' times blanked: a directory's mtime is its
    mount's start (S3 has none), files' are their Last-Modified."""
    out = subprocess.run(["ls", "-lRn", "--time-style=+%s", str(root)], capture_output=True,
                         text=True, timeout=300, check=True).stdout
    lines = []
    for line in out.replace(str(root), "MNT").splitlines():
        if line.startswith("d"):
            line = re.sub(r"^(\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+)\d+ ", r"\1T ", line)
        lines.append(line)
    return "\n".join(lines)


def requests(method: str) -> int:
    return PROXY.stats()["requests_by_method"].get(method, 0)


class ListingIndex(harness.WarmfsTestCase):
    timeout = 600.0

    def mount(self, cache_dir: Path, ttl: str):
        return super().mount(PROXY, f"s3://{BUCKET}/{PREFIX}",
                             args=["--cache-dir", str(cache_dir), "--cache-size", "64M",
                                   "--metadata-ttl", ttl, "--no-object-attrs"])

    def test_second_mount_lists_nothing_then_follows_the_bucket(self):
        cache = ssd.temp_dir(self.addCleanup) / "cache"
        m1 = self.mount(cache, "3600")
        started = time.monotonic()
        first = ls_lr(m1.path)
        cold = time.monotonic() - started
        self.assertEqual(len(re.findall(r" f\d{3}\.txt$", first, re.M)), 2900)
        self.assertEqual(len(re.findall(r" w\d{5}$", first, re.M)), 1100)
        s1 = m1.stats()["bucket_requests"]["list"]
        self.assertGreaterEqual(s1, DIRS)
        ssd.unmount(self, m1)

        # A second mount: the same `ls -lR`, with no LIST or HEAD.
        m2 = self.mount(cache, "3600")
        gets, heads = requests("GET"), requests("HEAD")
        started = time.monotonic()
        self.assertEqual(ls_lr(m2.path), first)
        indexed = time.monotonic() - started
        index_bytes = sum(f.stat().st_size for f in (cache / "listings").iterdir())
        print(f"\nls -lR of {len(KEYS)} keys, {DIRS} directories: {cold:.2f}s listing, "
              f"{indexed:.2f}s from the index; {cache / 'listings'}: {index_bytes} bytes",
              flush=True)
        stats = m2.stats()
        self.assertEqual(stats["bucket_requests"]["list"], 0, stats["bucket_requests"])
        self.assertEqual(stats["bucket_requests"]["head"], 0, stats["bucket_requests"])
        self.assertEqual(requests("GET") - gets, 0, "the bucket saw a LIST")
        self.assertEqual(requests("HEAD") - heads, 0, "the bucket saw a HEAD")
        self.assertEqual(stats["metadata"]["listing_index_hits"], DIRS, stats["metadata"])
        # What this mount writes: its directory is listed again by the next mount.
        (m2.path / "d0" / "new.txt").write_bytes(b"written here")
        (m2.path / "d0" / "e0" / "f000.txt").unlink()
        ssd.unmount(self, m2)

        # Another client changes the bucket.
        c = MOTO.client()
        c.put_object(Bucket=BUCKET, Key=f"{PREFIX}d5/e5/added.txt", Body=b"added by boto3")
        c.delete_object(Bucket=BUCKET, Key=f"{PREFIX}d1/e1/f003.txt")
        c.put_object(Bucket=BUCKET, Key=f"{PREFIX}wide/w00001", Body=b"longer than before")

        # A mount with a short TTL: served from the index at once (every entry is older
        # than a second), listed again in the background.
        m3 = self.mount(cache, "1")
        self.assertEqual((m3.path / "d0" / "new.txt").read_bytes(), b"written here")
        self.assertFalse((m3.path / "d0" / "e0" / "f000.txt").exists())
        deadline = time.monotonic() + 60
        while True:
            names = {p.name for p in (m3.path / "d5" / "e5").iterdir()}
            gone = "f003.txt" not in {p.name for p in (m3.path / "d1" / "e1").iterdir()}
            size = (m3.path / "wide" / "w00001").stat().st_size
            if "added.txt" in names and gone and size == len(b"longer than before"):
                break
            self.assertLess(time.monotonic(), deadline,
                            f"the bucket's changes did not show: added {'added.txt' in names}, "
                            f"deleted {gone}, size {size}\n{m3.log_tail()}")
            time.sleep(0.2)
        stats = m3.stats()["metadata"]
        self.assertGreater(stats["listing_index_hits"], 0, stats)
        self.assertGreater(stats["listing_index_refreshes"], 0, stats)
        self.assertEqual((m3.path / "d5" / "e5" / "added.txt").read_bytes(), b"added by boto3")

    def test_snapshot_of_a_mount_from_its_index(self):
        cache = ssd.temp_dir(self.addCleanup) / "cache"
        out = ssd.temp_dir(self.addCleanup)
        # Read-only, as a mount of a snapshot is: the two show the same modes.
        m = super().mount(PROXY, f"s3://{BUCKET}/{PREFIX}",
                          args=["--cache-dir", str(cache), "--cache-size", "64M",
                                "--metadata-ttl", "3600", "--read-only"])

        def snapshot(name: str) -> harness.Run:
            run = harness.run_cli(["snapshot", str(m.path), str(out / name)], m.env, timeout=120)
            self.assertEqual(run.rc, 0, run.describe())
            return run

        # Nothing indexed yet: the snapshot lists the prefix.
        gets = requests("GET")
        run = snapshot("listed.snap")
        self.assertIn(", listed: ", run.stderr)
        print(f"\nsnapshot of {len(KEYS) + 1} keys by listing: {run.seconds:.2f}s", flush=True)
        self.assertGreater(requests("GET") - gets, 0, "the snapshot did not list")

        # After `ls -lR` the index holds every directory: no LIST.
        original = ls_lr(m.path)
        lists, gets = m.stats()["bucket_requests"]["list"], requests("GET")
        run = snapshot("indexed.snap")
        self.assertIn(f": {len(KEYS) + 1} keys, from the listing index, 0 LIST requests",
                      run.stderr)
        self.assertEqual(requests("GET") - gets, 0, "the bucket saw a LIST")
        self.assertEqual(m.stats()["bucket_requests"]["list"], lists)
        print(f"\nsnapshot of {len(KEYS) + 1} keys from the index: {run.seconds:.2f}s "
              f"({run.stderr.strip()})", flush=True)

        # A mount of it shows the same tree, the empty directory included.
        snap = super().mount(PROXY, f"s3://{BUCKET}/{PREFIX}",
                             args=["--snapshot", str(out / "indexed.snap")])
        self.assertTrue((snap.path / "empty").is_dir())
        self.assertEqual(ls_lr(snap.path), original)
