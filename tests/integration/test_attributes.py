"""Attributes kept in the objects' user metadata (chmod, chown, utimens), symlinks, and both
shared with s3fs-fuse: checked in the bucket with boto3, through a second mount, and through
s3fs. Ends with a few pjdfstest files through tools/pjdfstest, so that tool keeps working.
"""

import os
import stat
import subprocess
import sys
import unittest
from pathlib import Path

import harness
import s3fs_mount

MOTO: harness.MotoServer
BUCKET = "attrs"


def setUpModule():
    harness.require("warmfs", "fuse", "moto")
    global MOTO
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    harness.create_bucket(MOTO.client(), BUCKET)


def head(key: str) -> dict:
    return MOTO.client().head_object(Bucket=BUCKET, Key=key)


def run(argv: list[str], timeout: float = 120) -> str:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                       env={"PATH": harness.BASE_PATH, "LANG": "C.UTF-8"})
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r.stdout


class Attributes(harness.WarmfsTestCase):
    timeout = 180.0

    def test_chmod_chown_touch_kept_in_the_bucket_and_after_a_remount(self):
        m = self.mount(MOTO, f"s3://{BUCKET}/keep")
        f = m.path / "f"
        f.write_bytes(b"hello")
        etag = head("keep/f")["ETag"]
        os.chmod(f, 0o640)
        os.chown(f, 1234, 5678)
        run(["touch", "-d", "2020-09-13 12:26:40.25 UTC", str(f)])
        d = m.path / "d"
        d.mkdir(mode=0o700)
        os.chmod(d, 0o750)
        st = os.stat(f)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o640)
        self.assertEqual((st.st_uid, st.st_gid), (1234, 5678))
        self.assertEqual(st.st_mtime_ns, 1_600_000_000_250_000_000)
        h = head("keep/f")
        self.assertEqual(h["Metadata"]["mode"], str(stat.S_IFREG | 0o640))
        self.assertEqual(h["Metadata"]["uid"], "1234")
        self.assertEqual(h["Metadata"]["gid"], "5678")
        self.assertEqual(h["Metadata"]["mtime"], "1600000000.250000000")
        self.assertEqual(h["ETag"], etag)  # copied onto itself, never re-uploaded
        self.assertEqual(MOTO.client().get_object(Bucket=BUCKET, Key="keep/f")["Body"].read(),
                         b"hello")
        marker = head("keep/d/")
        self.assertEqual(marker["Metadata"]["mode"], str(stat.S_IFDIR | 0o750))
        self.assertEqual(marker["ContentType"], "application/x-directory")
        stats = m.stats()["bucket_requests"]
        self.assertEqual(stats["put"], 2)  # the file and the marker: no re-upload
        self.assertGreaterEqual(stats["copy"], 3)

        again = harness.mount(self.addCleanup, MOTO, f"s3://{BUCKET}/keep", name="remount")
        st = os.stat(again.path / "f")
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o640)
        self.assertEqual((st.st_uid, st.st_gid), (1234, 5678))
        self.assertEqual(st.st_mtime_ns, 1_600_000_000_250_000_000)
        self.assertEqual(stat.S_IMODE(os.stat(again.path / "d").st_mode), 0o750)

    def test_rsync_a_twice_copies_nothing_the_second_time(self):
        src = self.tmpdir() / "src"
        (src / "sub").mkdir(parents=True)
        for i in range(5):
            (src / f"f{i}").write_bytes(os.urandom(1000 + i))
            os.chmod(src / f"f{i}", 0o600 + i)
        (src / "sub" / "deep").write_bytes(b"deep")
        os.utime(src / "sub" / "deep", (1_500_000_000, 1_500_000_000))
        os.symlink("f0", src / "link")
        # The root's time set well apart from the mount's, so a remount that lost it shows.
        os.utime(src, (1_400_000_000, 1_400_000_000))
        m = self.mount(MOTO, f"s3://{BUCKET}/rsync")
        first = run(["rsync", "-a", "-i", f"{src}/", f"{m.path}/"])
        self.assertIn("f0", first)
        second = run(["rsync", "-a", "-i", f"{src}/", f"{m.path}/"])
        self.assertEqual(second.strip(), "", "the second rsync -a changed something")
        # Through a fresh mount too: the attributes came from the bucket.
        again = harness.mount(self.addCleanup, MOTO, f"s3://{BUCKET}/rsync", name="remount")
        third = run(["rsync", "-a", "-i", f"{src}/", f"{again.path}/"])
        self.assertEqual(third.strip(), "", "rsync -a into a fresh mount changed something")
        self.assertEqual(stat.S_IMODE(os.stat(again.path / "f3").st_mode), 0o603)
        self.assertEqual(os.readlink(again.path / "link"), "f0")

    def test_symlinks(self):
        m = self.mount(MOTO, f"s3://{BUCKET}/links")
        (m.path / "dir").mkdir()
        (m.path / "dir" / "inside").write_bytes(b"in")
        (m.path / "file").write_bytes(b"data")
        os.symlink("file", m.path / "to-file")
        os.symlink("dir", m.path / "to-dir")
        os.symlink("nowhere/at/all", m.path / "dangling")
        self.assertEqual(os.readlink(m.path / "to-file"), "file")
        self.assertEqual((m.path / "to-file").read_bytes(), b"data")
        self.assertTrue(os.path.isdir(m.path / "to-dir"))
        self.assertEqual(os.listdir(m.path / "to-dir"), ["inside"])
        self.assertTrue(os.path.islink(m.path / "dangling"))
        self.assertFalse(os.path.exists(m.path / "dangling"))
        listing = run(["ls", "-l", str(m.path)])
        self.assertIn("to-file -> file", listing)
        self.assertIn("dangling -> nowhere/at/all", listing)
        self.assertTrue(any(line.startswith("l") for line in listing.splitlines()))
        # In the bucket: s3fs's layout, the target as the body.
        body = MOTO.client().get_object(Bucket=BUCKET, Key="links/dangling")["Body"].read()
        self.assertEqual(body, b"nowhere/at/all")
        self.assertEqual(int(head("links/dangling")["Metadata"]["mode"]) & 0o170000,
                         stat.S_IFLNK)
        os.unlink(m.path / "to-dir")
        self.assertTrue((m.path / "dir" / "inside").exists())
        again = harness.mount(self.addCleanup, MOTO, f"s3://{BUCKET}/links", name="remount")
        self.assertEqual(os.readlink(again.path / "dangling"), "nowhere/at/all")
        self.assertTrue(stat.S_ISLNK(os.lstat(again.path / "to-file").st_mode))

    def tmpdir(self) -> Path:
        return harness.temp_dir(self.addCleanup, "warmfs-attrs-")


class S3fsInterop(harness.WarmfsTestCase):
    timeout = 180.0

    def test_written_by_s3fs_read_through_warmfs(self):
        s = s3fs_mount.mount(self.addCleanup, MOTO, BUCKET, stat_cache=False)
        base = s.path / "from-s3fs"
        base.mkdir()
        (base / "f").write_bytes(b"s3fs")
        os.chmod(base / "f", 0o604)
        os.chown(base / "f", 1234, 5678)
        os.utime(base / "f", ns=(1_600_000_000_500_000_000, 1_600_000_000_250_000_000))
        (base / "d").mkdir(mode=0o710)
        os.symlink("f", base / "ln")
        m = self.mount(MOTO, f"s3://{BUCKET}/from-s3fs")
        st = os.stat(m.path / "f")
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o604)
        self.assertEqual((st.st_uid, st.st_gid), (1234, 5678))
        self.assertEqual(st.st_mtime_ns, 1_600_000_000_250_000_000)
        self.assertEqual(stat.S_IMODE(os.stat(m.path / "d").st_mode), 0o710)
        self.assertTrue(stat.S_ISLNK(os.lstat(m.path / "ln").st_mode))
        self.assertEqual(os.readlink(m.path / "ln"), "f")
        self.assertEqual((m.path / "ln").read_bytes(), b"s3fs")

    def test_written_by_warmfs_read_through_s3fs(self):
        m = self.mount(MOTO, f"s3://{BUCKET}/from-warmfs")
        (m.path / "f").write_bytes(b"warmfs")
        os.chmod(m.path / "f", 0o604)
        os.chown(m.path / "f", 1234, 5678)
        os.utime(m.path / "f", ns=(1_600_000_000_500_000_000, 1_600_000_000_250_000_000))
        (m.path / "d").mkdir(mode=0o710)
        os.symlink("f", m.path / "ln")
        os.mkfifo(m.path / "fifo", 0o620)
        s = s3fs_mount.mount(self.addCleanup, MOTO, BUCKET, stat_cache=False)
        base = s.path / "from-warmfs"
        st = os.stat(base / "f")
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o604)
        self.assertEqual((st.st_uid, st.st_gid), (1234, 5678))
        self.assertEqual(st.st_mtime_ns, 1_600_000_000_250_000_000)
        self.assertEqual(stat.S_IMODE(os.stat(base / "d").st_mode), 0o710)
        self.assertEqual(os.readlink(base / "ln"), "f")
        self.assertEqual((base / "ln").read_bytes(), b"warmfs")
        self.assertTrue(stat.S_ISFIFO(os.stat(base / "fifo").st_mode))


class Pjdfstest(harness.WarmfsTestCase):
    """A few pjdfstest files through tools/pjdfstest (the whole suite is a documented tool)."""

    timeout = 600.0

    def test_chmod_symlink_mknod_files_pass(self):
        tool = harness.REPO / "tools" / "pjdfstest"
        files = ["chmod/00.t", "symlink/00.t", "mknod/00.t", "utimensat/00.t"]
        env = {"PATH": f"{Path(sys.executable).parent}:{harness.BASE_PATH}", "LANG": "C.UTF-8",
               "WARMFS_BIN": str(harness.WARMFS), **harness.sanitizer_env()}
        r = subprocess.run([sys.executable, str(tool), "-v", *files], capture_output=True,
                           text=True, timeout=540, env=env)
        self.assertEqual(r.returncode, 0, f"{r.stdout}\n{r.stderr}")
        last = r.stdout.strip().splitlines()[-1]
        self.assertRegex(last, r"^pjdfstest warmfs: \d+ ok, 0 not ok$", r.stdout)
        self.assertNotRegex(last, r": 0 ok", r.stdout)


if __name__ == "__main__":
    unittest.main()
