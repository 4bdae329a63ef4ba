"""Snapshots (docs/snapshots.md): `warmfs snapshot` lists a bucket of keys in a tree on
moto (with authentication: moto pages ListObjectsV2, s3rver does not); a mount from the snapshot
walks it with `find` and a stat of every file with no LIST or HEAD, counted by warmfs stats and,
independently, by a proxy between warmfs and moto; an object overwritten after the snapshot is
ESTALE with a log line naming it; on a versioned bucket, --snapshot-versions reads the bytes the
snapshot was taken on.

WARMFS_SNAPSHOT_IT_KEYS sets the bucket's size: 20,000 by default, in every run of the suite;
100,000 for the full run (docs/testing.md), which takes about 15 minutes more: moto takes about
150 PUTs a second here, and reads every key of the bucket for each LIST.
"""

import errno
import os
import subprocess
import tempfile
import time
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import botocore.config

import harness

KEYS = int(os.environ.get("WARMFS_SNAPSHOT_IT_KEYS", "20000"))
BUCKET = "snapshots"
PREFIX = "ds/"
MOTO: harness.MotoServer
TMP: Path


def fast_client(server):
    """boto3 with a connection per upload thread."""
    return boto3.client("s3", endpoint_url=server.endpoint, aws_access_key_id=server.key,
                        aws_secret_access_key=server.secret, region_name=harness.REGION,
                        config=botocore.config.Config(max_pool_connections=64,
                                                      retries={"max_attempts": 10}))


def key_of(i: int) -> str:
    # 100 classes of 10 shards of files: a tree three levels deep, like an image dataset.
    return f"{PREFIX}class{i % 100:03d}/shard{i // 100 % 10}/img{i:07d}.bin"


def body_of(i: int) -> bytes:
    return b"%d\n" % i


def setUpModule():
    harness.require("warmfs", "fuse", "moto")
    global MOTO, TMP
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    TMP = Path(tempfile.mkdtemp(prefix="warmfs-snapshot-it-"))
    c = fast_client(MOTO)
    c.create_bucket(Bucket=BUCKET)
    started = time.monotonic()
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda i: c.put_object(Bucket=BUCKET, Key=key_of(i), Body=body_of(i)),
                      range(KEYS)))
    # Outside the prefix: never in the snapshot.
    c.put_object(Bucket=BUCKET, Key="other/x", Body=b"x")
    print(f"\nuploaded {KEYS} keys to moto in {time.monotonic() - started:.0f}s", flush=True)


def tearDownModule():
    subprocess.run(["rm", "-rf", str(TMP)], check=False)


def snapshot(server, source: str, file: Path, *extra: str) -> harness.Run:
    home = TMP / "home"
    home.mkdir(exist_ok=True)
    env = harness.base_env(home, server.key, server.secret)
    target = [str(file)] if str(file) not in ("", ".") else []
    return harness.run_cli(["snapshot", source, *target, "--endpoint", server.endpoint,
                            "--region", harness.REGION, "--path-style", *extra], env,
                           timeout=600)


class Snapshot(harness.WarmfsTestCase):
    timeout = 900.0

    @classmethod
    def setUpClass(cls):
        cls.file = TMP / "ds.wfsnap"
        cls.snap = snapshot(MOTO, f"s3://{BUCKET}/{PREFIX}", cls.file)
        print(f"warmfs snapshot of {KEYS} keys: {cls.snap.seconds:.2f}s", flush=True)

    def test_snapshot_lists_every_key(self):
        self.assertEqual(self.snap.rc, 0, self.snap.describe())
        self.assertIn(f": {KEYS} keys,", self.snap.stderr)
        self.assertTrue(self.file.stat().st_size > 0)

    def test_mount_walks_with_no_list_or_head(self):
        self.assertEqual(self.snap.rc, 0, self.snap.describe())
        proxy = harness.start_server(self.addCleanup, harness.S3Proxy(MOTO))
        m = self.mount(proxy, f"s3://{BUCKET}/{PREFIX}", args=["--snapshot", str(self.file)])
        before = proxy.stats()["requests"]
        started = time.monotonic()
        found = subprocess.run(["find", str(m.path), "-type", "f"], capture_output=True,
                               text=True, timeout=600, check=True).stdout.split("\n")
        self.assertEqual(len([f for f in found if f]), KEYS)
        print(f"find of {KEYS} files from a snapshot: {time.monotonic() - started:.2f}s", flush=True)
        shown = harness.walk_tree(m.path)  # readdir and a stat of every file
        expected = harness.expected_tree({key_of(i): len(body_of(i)) for i in range(KEYS)},
                                         PREFIX)
        self.assertEqual(shown, expected)
        stats = m.stats()
        self.assertEqual(stats["bucket_requests"]["list"], 0, stats["bucket_requests"])
        self.assertEqual(stats["bucket_requests"]["head"], 0, stats["bucket_requests"])
        self.assertEqual(stats["bucket_requests"]["get"], 0, stats["bucket_requests"])
        self.assertEqual(proxy.stats()["requests"], before, "the bucket saw requests")
        # Reads are the only requests, and bring the right bytes.
        self.assertEqual((m.path / key_of(KEYS // 2)[len(PREFIX):]).read_bytes(), body_of(KEYS // 2))
        self.assertEqual(m.stats()["bucket_requests"]["list"], 0)
        # Read-only, and shown so.
        self.assertEqual(os.stat(m.path / key_of(0)[len(PREFIX):]).st_mode & 0o777, 0o444)
        with self.assertRaises(OSError) as e:
            (m.path / "new.txt").write_bytes(b"n")
        self.assertEqual(e.exception.errno, errno.EROFS)

    def test_overwritten_object_is_stale(self):
        self.assertEqual(self.snap.rc, 0, self.snap.describe())
        c = fast_client(MOTO)
        i = KEYS - 3
        m = self.mount(MOTO, f"s3://{BUCKET}/{PREFIX}", args=["--snapshot", str(self.file)])
        c.put_object(Bucket=BUCKET, Key=key_of(i), Body=b"overwritten after the snapshot")
        # A key added after the snapshot is not there.
        c.put_object(Bucket=BUCKET, Key=PREFIX + "added-later", Body=b"new")
        try:
            path = m.path / key_of(i)[len(PREFIX):]
            self.assertEqual(path.stat().st_size, len(body_of(i)))  # the snapshot's size
            with self.assertRaises(OSError) as e:
                path.read_bytes()
            self.assertEqual(e.exception.errno, errno.ESTALE)
            self.assertFalse((m.path / "added-later").exists())
            log = m.log.read_text()
            self.assertIn(f"{key_of(i)} changed since the snapshot", log)
        finally:
            c.put_object(Bucket=BUCKET, Key=key_of(i), Body=body_of(i))
            c.delete_object(Bucket=BUCKET, Key=PREFIX + "added-later")

    def test_named_snapshot_in_the_bucket_and_from_a_mount(self):
        # A bucket of its own, of 1,500 keys in 15 folders: moto reads every key of a bucket
        # for each LIST, and what is checked here does not need the 100,000.
        c = fast_client(MOTO)
        bucket, n = "named", 1500
        c.create_bucket(Bucket=bucket)
        named_key = lambda i: f"{PREFIX}class{i % 15:02d}/img{i:05d}.bin"  # noqa: E731
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda i: c.put_object(Bucket=bucket, Key=named_key(i),
                                                 Body=body_of(i)), range(n)))
        c.put_object(Bucket=bucket, Key="other/x", Body=b"x")
        run = snapshot(MOTO, f"s3://{bucket}/{PREFIX}", Path(""), "--name", "v1")
        self.assertEqual(run.rc, 0, run.describe())
        self.assertIn(f": {n} keys,", run.stderr)
        c.head_object(Bucket=bucket, Key=PREFIX + ".warmfs/snapshots/v1")  # independent check

        # A plain mount of the prefix does not show the reserved folder: its root's .warmfs is
        # the control directory the core serves (docs/loaders.md), not the bucket's objects.
        plain = self.mount(MOTO, f"s3://{bucket}/{PREFIX}")
        self.assertNotIn(".warmfs", os.listdir(plain.path))
        self.assertEqual(os.listdir(plain.path / ".warmfs"), ["order"])
        self.assertFalse((plain.path / ".warmfs" / "snapshots").exists())
        self.assertEqual(len(os.listdir(plain.path)), 15)

        # Mounted by name: the manifest is one HEAD and one GET, and no LIST.
        named = self.mount(MOTO, f"s3://{bucket}/{PREFIX}", args=["--snapshot", "v1"])
        self.assertEqual(sorted(os.listdir(named.path)), sorted(os.listdir(plain.path)))
        rel = named_key(77)[len(PREFIX):]
        self.assertEqual((named.path / rel).read_bytes(), body_of(77))
        self.assertEqual(named.stats()["bucket_requests"]["list"], 0)

        # A snapshot of a snapshot mount copies its manifest: no LIST.
        env = harness.base_env(TMP / "home", MOTO.key, MOTO.secret)
        copy = TMP / "copy.wfsnap"
        run = harness.run_cli(["snapshot", str(named.path), str(copy)], env, timeout=120)
        self.assertEqual(run.rc, 0, run.describe())
        self.assertIn(f": {n} keys, copied from the mount's snapshot v1, no LIST", run.stderr)
        again = self.mount(MOTO, f"s3://{bucket}/{PREFIX}", args=["--snapshot", str(copy)])
        self.assertEqual((again.path / rel).stat().st_size, len(body_of(77)))
        # The file replaced by another snapshot since the mount: not copied as if it were this one.
        replaced = snapshot(MOTO, f"s3://{bucket}/other", copy)
        self.assertEqual(replaced.rc, 0, replaced.describe())
        run = harness.run_cli(["snapshot", str(again.path), str(TMP / "stale-copy.wfsnap")], env)
        self.assertEqual(run.rc, 1, run.describe())
        self.assertIn("is no longer the snapshot mounted at", run.stderr)

        # A snapshot of a plain mount lists its bucket (the endpoint comes from the mount).
        run = harness.run_cli(["snapshot", str(plain.path), "--name", "v2"], env, timeout=600)
        self.assertEqual(run.rc, 0, run.describe())
        self.assertIn(f": {n} keys,", run.stderr)
        c.head_object(Bucket=bucket, Key=PREFIX + ".warmfs/snapshots/v2")

        # An unknown name is one clear line and no mount.
        m = harness.Mount(MOTO, f"s3://{bucket}/{PREFIX}", args=["--snapshot", "nope"])
        self.addCleanup(m.close)
        with self.assertRaises(AssertionError) as e:
            m.start()
        self.assertIn("no snapshot named 'nope'", str(e.exception))

    def test_mount_refuses_a_snapshot_of_another_prefix(self):
        self.assertEqual(self.snap.rc, 0, self.snap.describe())
        m = harness.Mount(MOTO, f"s3://{BUCKET}/other", args=["--snapshot", str(self.file)])
        self.addCleanup(m.close)
        with self.assertRaises(AssertionError) as e:
            m.start()
        self.assertIn("is of s3://snapshots/ds/, not of s3://snapshots/other/", str(e.exception))

    def test_bad_snapshot_file(self):
        bad = TMP / "bad.wfsnap"
        bad.write_bytes(b"not a snapshot")
        m = harness.Mount(MOTO, f"s3://{BUCKET}/{PREFIX}", args=["--snapshot", str(bad)])
        self.addCleanup(m.close)
        with self.assertRaises(AssertionError) as e:
            m.start()
        self.assertIn("not a valid warmfs snapshot", str(e.exception))


class FlatSnapshot(harness.WarmfsTestCase):
    """One flat folder of several pages lists by key range (start-after, in parallel), and
    exactly as a serial listing: every file, once, UTF-8 names and subfolders among them."""

    timeout = 300.0

    def test_flat_folder_lists_every_key_once(self):
        c = fast_client(MOTO)
        bucket = "flat"
        c.create_bucket(Bucket=bucket)
        names = ([f"{i:06d}.bin" for i in range(3000)] + [f"été-{i}" for i in range(300)]
                 + [f"d{i:03d}/x" for i in range(50)] + [f"d{i:03d}!" for i in range(50)])
        keys = ["f/" + n for n in names]
        with ThreadPoolExecutor(32) as pool:
            list(pool.map(lambda k: c.put_object(Bucket=bucket, Key=k, Body=k.encode()), keys))
        c.put_object(Bucket=bucket, Key="f0/outside", Body=b"o")
        file = TMP / "flat.wfsnap"
        run = snapshot(MOTO, f"s3://{bucket}/f/", file)
        self.assertEqual(run.rc, 0, run.describe())
        self.assertIn(f": {len(keys)} keys,", run.stderr)
        print(f"\nflat folder of {len(keys)} keys: {run.stderr.strip()}", flush=True)
        m = self.mount(MOTO, f"s3://{bucket}/f/", args=["--snapshot", str(file)])
        shown = harness.walk_tree(m.path)
        self.assertEqual(shown, harness.expected_tree({k: len(k.encode()) for k in keys}, "f/"))
        self.assertEqual(m.stats()["bucket_requests"]["list"], 0)


class VersionedSnapshot(harness.WarmfsTestCase):
    """--versions / --snapshot-versions: reads name the snapshot's version ids."""

    timeout = 120.0

    def test_snapshot_reads_its_versions_after_overwrite_and_delete(self):
        c = MOTO.client()
        bucket = "versioned"
        c.create_bucket(Bucket=bucket)
        c.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        originals = {f"v/d{i % 3}/f{i}": b"original %d\n" % i for i in range(30)}
        for k, v in originals.items():
            c.put_object(Bucket=bucket, Key=k, Body=v)
        # An older version of one key, overwritten before the snapshot: the snapshot has the
        # newer one.
        c.put_object(Bucket=bucket, Key="v/d0/f0", Body=b"second\n")
        originals["v/d0/f0"] = b"second\n"
        # A key deleted before the snapshot is not in it.
        c.put_object(Bucket=bucket, Key="v/gone", Body=b"g")
        c.delete_object(Bucket=bucket, Key="v/gone")
        file = TMP / "versioned.wfsnap"
        run = snapshot(MOTO, f"s3://{bucket}/v", file, "--versions", "--concurrency", "4")
        self.assertEqual(run.rc, 0, run.describe())
        self.assertIn(": 30 keys,", run.stderr)

        c.put_object(Bucket=bucket, Key="v/d1/f1", Body=b"overwritten\n")
        c.delete_object(Bucket=bucket, Key="v/d2/f2")
        m = self.mount(MOTO, f"s3://{bucket}/v",
                       args=["--snapshot", str(file), "--snapshot-versions"])
        self.assertFalse((m.path / "gone").exists())
        for k, v in originals.items():
            self.assertEqual((m.path / k[2:]).read_bytes(), v, k)
        # Without --snapshot-versions the same snapshot pins by ETag: the overwritten object
        # is stale.
        m2 = self.mount(MOTO, f"s3://{bucket}/v", args=["--snapshot", str(file)])
        with self.assertRaises(OSError) as e:
            (m2.path / "d1/f1").read_bytes()
        self.assertEqual(e.exception.errno, errno.ESTALE)
        self.assertEqual((m2.path / "d0/f3").read_bytes(), originals["v/d0/f3"])

    def test_versions_need_a_snapshot_taken_with_them(self):
        c = MOTO.client()
        c.create_bucket(Bucket="plain")
        c.put_object(Bucket="plain", Key="p/a", Body=b"a")
        file = TMP / "plain.wfsnap"
        run = snapshot(MOTO, "s3://plain/p", file)
        self.assertEqual(run.rc, 0, run.describe())
        m = harness.Mount(MOTO, "s3://plain/p", args=["--snapshot", str(file),
                                                      "--snapshot-versions"])
        self.addCleanup(m.close)
        with self.assertRaises(AssertionError) as e:
            m.start()
        self.assertIn("was taken without version ids", str(e.exception))


class SnapshotCli(harness.WarmfsTestCase):
    timeout = 60.0

    def test_bad_source_is_a_usage_error(self):
        env = harness.base_env(TMP)
        run = harness.run_cli(["snapshot", "bucket/x", str(TMP / "f")], env)
        self.assertEqual(run.rc, 2, run.describe())
        self.assertIn("is neither s3://BUCKET[/PREFIX] nor a warmfs mount", run.stderr)

    def test_missing_bucket_is_one_line(self):
        run = snapshot(MOTO, "s3://no-such-bucket/x", TMP / "nothing.wfsnap")
        self.assertEqual(run.rc, 1, run.describe())
        self.assertIn("cannot snapshot s3://no-such-bucket/x/: LIST", run.stderr)
        self.assertIn("NoSuchBucket", run.stderr)
        self.assertFalse((TMP / "nothing.wfsnap").exists())


if __name__ == "__main__":
    unittest.main()
