"""Writable branches of a snapshot (docs/snapshots.md, "Branches"), on moto with authentication:
two branches of one stored snapshot, each adding, changing, renaming and deleting different
files through its mount; each shows only its own changes while mounted, after a remount and on
a second (read-only) mount; a plain mount of the snapshot is unchanged; the bucket (checked
with boto3) keeps the snapshot's keys as they were, and each branch's record and bytes below
its own folder, with no copy of a renamed unchanged file; a snapshot of a branch mounts and keeps
showing what it took while the branch goes on; a read-only mount follows the writer within the
metadata TTL; a writable mount deletes the data objects no record names (a killed mount's, a
taken-over mount's). Prints the time to create a branch.
"""

import errno
import json
import os
import re
import tempfile
import time
import unittest
from pathlib import Path

import harness

BUCKET = "branches"
PREFIX = "ds/"
MOTO: harness.MotoServer
TMP: Path
BASE = {f"d{d}/f{f}.txt": b"base %d/%d\n" % (d, f) for d in range(3) for f in range(5)}
BASE["top.txt"] = b"top\n"
BASE["big.bin"] = harness.make_data(9 << 20, 7)  # above one PutObject: read in chunks


def setUpModule():
    harness.require("warmfs", "fuse", "moto")
    global MOTO, TMP
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    TMP = Path(tempfile.mkdtemp(prefix="warmfs-branch-it-"))
    c = MOTO.client()
    harness.create_bucket(c, BUCKET)
    harness.put_many(c, BUCKET, {PREFIX + k: v for k, v in BASE.items()})
    c.put_object(Bucket=BUCKET, Key="other/x", Body=b"x")
    run = cli(["snapshot", f"s3://{BUCKET}/{PREFIX}", "--name", "base"])
    if run.rc != 0:
        raise AssertionError(run.describe())


def tearDownModule():
    import shutil
    shutil.rmtree(TMP, ignore_errors=True)


def cli(args: list[str]) -> harness.Run:
    home = TMP / "home"
    home.mkdir(exist_ok=True)
    env = harness.base_env(home, MOTO.key, MOTO.secret)
    return harness.run_cli([*args, "--endpoint", MOTO.endpoint, "--region", harness.REGION,
                            "--path-style"], env, timeout=60)


def tree(root: Path) -> dict[str, bytes]:
    """Every file below root with its bytes, and every directory as None."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for d in dirnames:
            out[os.path.normpath(os.path.join(rel, d)) + "/"] = None
        for f in filenames:
            out[os.path.normpath(os.path.join(rel, f))] = (Path(dirpath) / f).read_bytes()
    return out


def expected_tree(files: dict[str, bytes], dirs: tuple[str, ...] = ()) -> dict[str, bytes]:
    out = dict(files)
    for k in list(files) + [d + "/x" for d in dirs]:
        parts = k.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            out["/".join(parts[:i]) + "/"] = None
    return out


def write(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


# What each branch does through its mount, and what it then shows (different files each).
CKPT = harness.make_data(20 << 20, 11)  # a multipart upload into the branch


def change_a(m: Path) -> dict[str, bytes]:
    (m / "new").mkdir()
    write(m / "new" / "a.txt", b"added by a\n")
    write(m / "ckpt.bin", CKPT)
    write(m / "d0" / "f0.txt", b"changed by a\n")
    os.rename(m / "d1" / "f1.txt", m / "d1" / "renamed-a.txt")  # unchanged: no copy
    os.rename(m / "new" / "a.txt", m / "new" / "a2.txt")  # a file of the branch
    os.unlink(m / "d2" / "f2.txt")
    (m / "empty-a").mkdir()
    os.rename(m / "d1", m / "d1-a")  # a directory: every name below it
    files = dict(BASE)
    files["new/a2.txt"] = b"added by a\n"
    files["ckpt.bin"] = CKPT
    files["d0/f0.txt"] = b"changed by a\n"
    files["d1/renamed-a.txt"] = files.pop("d1/f1.txt")
    del files["d2/f2.txt"]
    files = {("d1-a/" + k[3:] if k.startswith("d1/") else k): v for k, v in files.items()}
    return expected_tree(files, ("empty-a",))


def change_b(m: Path) -> dict[str, bytes]:
    write(m / "b.txt", b"added by b\n")
    with open(m / "d0" / "f1.txt", "ab") as f:  # a change in place: the snapshot's bytes + more
        f.write(b"appended by b\n")
    (m / "moved").mkdir()
    os.rename(m / "d1" / "f3.txt", m / "moved" / "f3.txt")
    os.rename(m / "big.bin", m / "big-b.bin")
    for f in range(5):
        os.unlink(m / "d2" / f"f{f}.txt")
    os.rmdir(m / "d2")
    os.chmod(m / "d0" / "f2.txt", 0o600)  # an unchanged file's mode: its bytes into the branch
    files = dict(BASE)
    files["b.txt"] = b"added by b\n"
    files["d0/f1.txt"] = BASE["d0/f1.txt"] + b"appended by b\n"
    files["moved/f3.txt"] = files.pop("d1/f3.txt")
    files["big-b.bin"] = files.pop("big.bin")
    for f in range(5):
        del files[f"d2/f{f}.txt"]
    return expected_tree(files)


class Branches(harness.WarmfsTestCase):
    timeout = 120.0

    def branch_mount(self, name: str, *extra: str) -> harness.Mount:
        return self.mount(MOTO, f"s3://{BUCKET}/{PREFIX}",
                          args=["--snapshot", "base", "--branch", name, *extra])

    def record(self, name: str) -> dict:
        body = MOTO.client().get_object(
            Bucket=BUCKET, Key=f"{PREFIX}.warmfs/branches/{name}/record")["Body"].read()
        return json.loads(body)

    def test_two_branches_of_one_snapshot(self):
        c = MOTO.client()
        base_keys = {o["Key"]: o["ETag"] for o in
                     c.list_objects_v2(Bucket=BUCKET, Prefix=PREFIX)["Contents"]
                     if "/.warmfs/" not in "/" + o["Key"]}
        self.assertEqual(len(base_keys), len(BASE))
        base_tree = expected_tree(BASE)

        plain = self.mount(MOTO, f"s3://{BUCKET}/{PREFIX}", args=["--snapshot", "base"])
        self.assertEqual(tree(plain.path), base_tree)
        times = {"plain --snapshot": plain.run.seconds}
        a = self.branch_mount("a")
        times["--branch a (new)"] = a.run.seconds
        b = self.branch_mount("b")
        times["--branch b (new)"] = b.run.seconds
        created = {}
        for name, m in (("a", a), ("b", b)):
            # The log file may hold earlier runs' lines: this mount's is the last.
            found = re.findall(r"branch '%s' of snapshot base: created in ([0-9.]+) ms" % name,
                               m.log.read_text())
            self.assertTrue(found, m.log_tail())
            created[name] = float(found[-1])
        print(f"\nmount times: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in times.items())
              + f"; branch record created in a {created['a']:.1f} ms, b {created['b']:.1f} ms",
              flush=True)
        for name in ("a", "b"):
            self.assertLess(created[name], 100.0)

        want_a = change_a(a.path)
        want_b = change_b(b.path)
        # Durable at close/fsync: the bucket's records show the changes while still mounted.
        rec_a = {e["key"]: e for e in self.record("a")["entries"]}
        self.assertEqual(rec_a["d1-a/renamed-a.txt"]["kind"], "snapshot")
        self.assertEqual(rec_a["d1-a/renamed-a.txt"]["target"], "d1/f1.txt")
        self.assertEqual(rec_a["d1-a/f0.txt"]["target"], "d1/f0.txt")
        self.assertEqual(rec_a["d1/f0.txt"]["kind"], "deleted")
        self.assertEqual(rec_a["d2/f2.txt"]["kind"], "deleted")
        self.assertEqual(rec_a["ckpt.bin"]["kind"], "data")
        self.assertEqual(rec_a["ckpt.bin"]["size"], len(CKPT))
        self.assertNotIn("new/a.txt", rec_a)
        self.assertEqual(self.record("b")["version"], 1)
        # Each live mount shows its own changes only; the snapshot's mount is unchanged.
        self.assertEqual(tree(a.path), want_a)
        self.assertEqual(tree(b.path), want_b)
        self.assertEqual(tree(plain.path), base_tree)

        # Remounts show the same; so does a second, read-only mount alongside.
        for m in (a, b, plain):
            m.close()
        a2 = self.branch_mount("a")
        a3 = self.branch_mount("a", "--read-only")
        b2 = self.branch_mount("b")
        plain2 = self.mount(MOTO, f"s3://{BUCKET}/{PREFIX}", args=["--snapshot", "base"])
        self.assertEqual(tree(a2.path), want_a)
        self.assertEqual(tree(a3.path), want_a)
        self.assertEqual(tree(b2.path), want_b)
        self.assertEqual(tree(plain2.path), base_tree)
        self.assertEqual((b2.path / "d0" / "f2.txt").stat().st_mode & 0o777, 0o600)
        self.assertEqual((a2.path / "d0" / "f2.txt").stat().st_mode & 0o777, 0o644)
        with self.assertRaises(OSError) as e:
            write(a3.path / "ro.txt", b"x")
        self.assertEqual(e.exception.errno, errno.EROFS)

        # The bucket: the snapshot's keys as they were, nothing new outside the branches'
        # folders, and no copy of the file renamed unchanged.
        now = {o["Key"]: o["ETag"] for o in harness_list(c, PREFIX)}
        self.assertEqual({k: v for k, v in now.items() if "/.warmfs/" not in "/" + k}, base_keys)
        data_a = [k for k in now if k.startswith(f"{PREFIX}.warmfs/branches/a/data/")]
        # new/a2.txt, ckpt.bin, d0/f0.txt and the new/ and empty-a/ markers: one object each.
        self.assertEqual(len(data_a), 5, data_a)
        sizes = sorted(c.head_object(Bucket=BUCKET, Key=k)["ContentLength"] for k in data_a)
        self.assertEqual(sizes, sorted([0, 0, len(b"added by a\n"), len(CKPT),
                                        len(b"changed by a\n")]))
        data_b = [k for k in now if k.startswith(f"{PREFIX}.warmfs/branches/b/data/")]
        # b.txt, d0/f1.txt, d0/f2.txt (its new mode) and the moved/ marker.
        self.assertEqual(len(data_b), 4, data_b)

        # A snapshot of a branch: its names, each read where its bytes are (no LIST, no copy).
        run = cli(["snapshot", str(a2.path), "--name", "a-snap"])
        self.assertEqual(run.rc, 0, run.describe())
        self.assertIn("branch a of snapshot base, no LIST", run.stderr)
        snap_a = self.mount(MOTO, f"s3://{BUCKET}/{PREFIX}", args=["--snapshot", "a-snap"])
        self.assertEqual(tree(snap_a.path), want_a)
        # The branch goes on; the snapshot keeps showing what it took (the branch is pinned,
        # so it keeps the data objects the snapshot reads).
        write(a2.path / "ckpt.bin", b"overwritten after the snapshot")
        os.unlink(a2.path / "d0" / "f0.txt")
        self.assertEqual(harness.read_uncached(snap_a.path / "ckpt.bin"), CKPT)
        self.assertEqual((snap_a.path / "d0" / "f0.txt").read_bytes(), b"changed by a\n")
        self.assertEqual((a2.path / "ckpt.bin").read_bytes(), b"overwritten after the snapshot")
        after = {o["Key"] for o in harness_list(c, f"{PREFIX}.warmfs/branches/a/")}
        self.assertEqual(len([k for k in after if "/data/" in k]), 6, after)
        self.assertIn(f"{PREFIX}.warmfs/branches/a/pins/a-snap", after)

    def test_one_writer_per_branch(self):
        first = self.branch_mount("w")
        write(first.path / "one.txt", b"1\n")
        second = self.branch_mount("w")
        self.assertEqual((second.path / "one.txt").read_bytes(), b"1\n")
        # The first mount's changes fail from now on: the branch was taken over. (A file's
        # upload failing is EIO at fsync, as any failed upload is.)
        with self.assertRaises(OSError) as e:
            write(first.path / "two.txt", b"2\n")
        self.assertEqual(e.exception.errno, errno.EIO)
        with self.assertRaises(OSError) as e:
            os.unlink(first.path / "one.txt")
        self.assertEqual(e.exception.errno, errno.ESTALE)
        self.assertIn("taken over by another mount", first.log.read_text())
        write(second.path / "three.txt", b"3\n")
        second.close()
        again = self.branch_mount("w", "--read-only")
        self.assertEqual(sorted(p.name for p in again.path.iterdir() if p.name.endswith(".txt")),
                         ["one.txt", "three.txt", "top.txt"])

    def test_read_only_mount_follows_the_writer(self):
        """A read-only mount of a branch shows the writer's changes within --metadata-ttl."""
        w = self.branch_mount("follow")
        write(w.path / "one.txt", b"one\n")
        r = self.branch_mount("follow", "--read-only", "--metadata-ttl", "1")
        self.assertEqual((r.path / "one.txt").read_bytes(), b"one\n")
        write(w.path / "two.txt", b"two\n")
        write(w.path / "one.txt", b"one, again\n")
        os.unlink(w.path / "top.txt")
        deadline = time.monotonic() + 15
        while True:
            names = {p.name for p in r.path.iterdir()}
            if "two.txt" in names and "top.txt" not in names:
                break
            if time.monotonic() > deadline:
                self.fail(f"the read-only mount shows {sorted(names)}\n{r.log_tail()}")
            time.sleep(0.2)
        self.assertEqual((r.path / "two.txt").read_bytes(), b"two\n")
        self.assertEqual((r.path / "one.txt").read_bytes(), b"one, again\n")
        self.assertIn("record read again", r.log.read_text())

    def test_orphans_swept(self):
        """Data objects no record names are deleted by the next writable mount (checked with
        boto3): what a mount killed between a file's bytes and its record leaves, and what a
        mount writes after its branch was taken over. Named ones stay."""
        c = MOTO.client()
        root = f"{PREFIX}.warmfs/branches/sweep/data/"
        first = self.branch_mount("sweep")
        write(first.path / "kept.txt", b"kept\n")
        killed = f"{root}{self.record('sweep')['writer']}/99999999"
        c.put_object(Bucket=BUCKET, Key=killed, Body=b"k" * 1000)
        time.sleep(1.1)  # Last-Modified has whole seconds: the next record is newer
        second = self.branch_mount("sweep")
        with self.assertRaises(OSError):  # taken over: its bytes get no record
            write(first.path / "fenced.txt", b"fenced\n")
        time.sleep(1.1)
        write(second.path / "second.txt", b"second\n")  # a record newer than the fenced bytes
        self.assertEqual(self.wait_swept(second)["deleted"], 1)
        keys = sorted(o["Key"] for o in harness_list(c, root))
        self.assertEqual(len(keys), 3, keys)  # kept, fenced, second
        self.assertNotIn(killed, keys)
        second.close()
        third = self.branch_mount("sweep")
        swept = self.wait_swept(third)
        self.assertEqual((swept["deleted"], swept["deleted_bytes"]), (1, len(b"fenced\n")))
        self.assertEqual(len(harness_list(c, root)), 2)
        self.assertEqual(sorted(p.name for p in third.path.iterdir() if p.name.endswith(".txt")),
                         ["kept.txt", "second.txt", "top.txt"])
        self.assertEqual((third.path / "kept.txt").read_bytes(), b"kept\n")
        self.assertEqual((third.path / "second.txt").read_bytes(), b"second\n")
        self.assertIn("deleted 1 orphaned data objects", third.log.read_text())

    def wait_swept(self, m: harness.Mount) -> dict:
        """The mount's sweep, once it has ended (warmfs stats)."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            swept = m.stats()["branch"].get("orphans_swept")
            if swept is not None:
                return swept
            time.sleep(0.1)
        self.fail(f"no sweep within 20 s\n{m.log_tail()}")

    def test_refusals(self):
        mnt = harness.temp_dir(self.addCleanup)
        run = cli(["mount", f"s3://{BUCKET}/{PREFIX}", str(mnt), "--branch", "x"])
        self.assertEqual(run.rc, 2, run.describe())
        self.assertIn("--branch needs --snapshot", run.stderr)
        run = cli(["mount", f"s3://{BUCKET}/{PREFIX}", str(mnt), "--snapshot", "base",
                   "--branch", "bad/name"])
        self.assert_refused(run, mnt, 30)
        self.assertIn("a name is 1 to 128", run.stderr)
        run = cli(["mount", f"s3://{BUCKET}/{PREFIX}", str(mnt), "--snapshot", "base",
                   "--branch", "never-made", "--read-only"])
        self.assert_refused(run, mnt, 30)
        self.assertIn("no branch 'never-made'", run.stderr)


def harness_list(c, prefix: str) -> list[dict]:
    out, token = [], None
    while True:
        kw = {"Bucket": BUCKET, "Prefix": prefix}
        if token:
            kw["ContinuationToken"] = token
        page = c.list_objects_v2(**kw)
        out += page.get("Contents", [])
        if not page.get("IsTruncated"):
            return out
        token = page["NextContinuationToken"]


if __name__ == "__main__":
    unittest.main()
