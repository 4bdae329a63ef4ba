"""Writes through the mount: checkpoints durable at fsync, tools writing into the mount, random
writes against a shadow file, failures and crashes, and the namespace operations. Every
outcome is checked in the bucket with boto3, not only through the mount.
"""

import errno
import hashlib
import os
import random
import signal
import subprocess
import tarfile
import threading
import time
import unittest
from pathlib import Path

import harness
from harness import MiB

MOTO: harness.MotoServer
BUCKET = "writes"


def setUpModule():
    harness.require("warmfs", "fuse", "moto")
    global MOTO
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    harness.create_bucket(MOTO.client(), BUCKET)


def bucket_bytes(key: str) -> bytes:
    return MOTO.client().get_object(Bucket=BUCKET, Key=key)["Body"].read()


def bucket_has(key: str) -> bool:
    try:
        MOTO.client().head_object(Bucket=BUCKET, Key=key)
        return True
    except MOTO.client().exceptions.ClientError:
        return False


def open_uploads(prefix: str = "") -> list:
    return MOTO.client().list_multipart_uploads(Bucket=BUCKET, Prefix=prefix).get("Uploads", [])


def run(argv: list[str], timeout: float = 120, cwd=None) -> None:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                       env={"PATH": harness.BASE_PATH, "LANG": "C.UTF-8"})
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {r.returncode}\n{r.stdout}\n{r.stderr}")


class Checkpoint(harness.WarmfsTestCase):
    timeout = 300.0

    def test_checkpoint_pattern_1GiB(self):
        """open .tmp, write 1 GiB in 4 MiB pieces, flush, fsync: the bucket has it all at once;
        rename: the final key is complete and .tmp gone; reading back pulls nothing."""
        # No SSD tier: the written chunks go to memory, which must hold all of them (1 GiB
        # of a 1.5 GiB budget; the rest is the read-ahead's).
        m = self.mount(MOTO, f"s3://{BUCKET}/ckpt", args=["--memory-cache-size", "1536M"])
        tmp, final = m.path / "step.pt.tmp", m.path / "step.pt"
        piece = 4 * MiB
        total = 1024 * MiB
        rng = random.Random(7)
        block = rng.randbytes(piece)
        h = hashlib.sha256()
        with open(tmp, "wb") as f:
            for i in range(total // piece):
                data = block[i % 97:] + block[:i % 97]  # each piece differs
                h.update(data)
                f.write(data)
            f.flush()
            last_write = time.monotonic()
            os.fsync(f.fileno())
            fsync_s = time.monotonic() - last_write
            # Right after fsync returns, an independent client sees the whole object.
            head = MOTO.client().head_object(Bucket=BUCKET, Key="ckpt/step.pt.tmp")
            self.assertEqual(head["ContentLength"], total)
            self.assertEqual(hashlib.sha256(bucket_bytes("ckpt/step.pt.tmp")).hexdigest(), h.hexdigest())
        print(f"\n  1 GiB checkpoint: {fsync_s:.2f} s from the last write() to fsync() returning",
              flush=True)
        os.rename(tmp, final)
        self.assertFalse(bucket_has("ckpt/step.pt.tmp"))
        self.assertEqual(hashlib.sha256(bucket_bytes("ckpt/step.pt")).hexdigest(), h.hexdigest())
        self.assertEqual(open_uploads("ckpt/"), [])
        before = m.stats()
        got = hashlib.sha256()
        with open(final, "rb") as f:
            while chunk := f.read(8 * MiB):
                got.update(chunk)
        self.assertEqual(got.hexdigest(), h.hexdigest())
        after = m.stats()
        self.assertEqual(after["bucket_bytes_read"], before["bucket_bytes_read"],
                         "reading the checkpoint back pulled bytes from the bucket")
        self.assertGreaterEqual(after["bucket_bytes_written"], total)
        self.assertEqual(after["upload_failures"], 0)
        self.assertEqual(after["uploads_in_flight"], 0)
        self.assertEqual(sorted(os.listdir(m.path)), ["step.pt"])


class Tools(harness.WarmfsTestCase):
    timeout = 180.0

    def setUp(self):
        super().setUp()
        self.src = harness.temp_dir(self.addCleanup, "warmfs-src-")
        rng = random.Random(3)
        self.files = {}
        for i in range(12):
            rel = f"tree/sub{i % 3}/deeper/f{i}.bin" if i % 2 else f"tree/sub{i % 3}/f{i}.txt"
            size = rng.choice([0, 1, 4095, 65536, 1 * MiB + 3, 9 * MiB + 17])
            data = rng.randbytes(size)
            (self.src / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.src / rel).write_bytes(data)
            self.files[rel] = data

    def assert_bucket_tree(self, prefix: str):
        c = MOTO.client()
        keys = {k for k in harness.list_keys(c, BUCKET, prefix) if not k.endswith("/")}
        want = {prefix + rel.removeprefix("tree/") for rel in self.files}
        self.assertEqual(keys, want)
        for rel, data in self.files.items():
            key = prefix + rel.removeprefix("tree/")
            self.assertEqual(hashlib.sha256(bucket_bytes(key)).hexdigest(),
                             hashlib.sha256(data).hexdigest(), key)

    def test_cp_rsync_tar_dd(self):
        m = self.mount(MOTO, f"s3://{BUCKET}/tools")
        run(["cp", "-r", str(self.src / "tree"), str(m.path / "cp")])
        self.assert_bucket_tree("tools/cp/")
        run(["rsync", "-r", "--inplace", str(self.src / "tree") + "/", str(m.path / "rsync")])
        self.assert_bucket_tree("tools/rsync/")
        # rsync's default: a temporary name, then rename over the final one.
        run(["rsync", "-rt", str(self.src / "tree") + "/", str(m.path / "rsync2")])
        self.assert_bucket_tree("tools/rsync2/")
        tar = self.src / "t.tar"
        with tarfile.open(tar, "w") as t:
            t.add(self.src / "tree", arcname=".")
        (m.path / "tar").mkdir()
        run(["tar", "-xf", str(tar), "-C", str(m.path / "tar")])
        self.assert_bucket_tree("tools/tar/")
        big = self.src / "big.bin"
        big.write_bytes(random.Random(5).randbytes(40 * MiB + 5))
        run(["dd", f"if={big}", f"of={m.path / 'dd.bin'}", "bs=1M", "conv=fsync", "status=none"])
        self.assertEqual(bucket_bytes("tools/dd.bin"), big.read_bytes())
        self.assertEqual(open_uploads("tools/"), [])


class RandomWrites(harness.WarmfsTestCase):
    timeout = 180.0

    def test_against_shadow_file(self):
        """Random writes, truncates and appends on a file in the mount and on a local shadow:
        byte for byte the same, through the mount and in the bucket, after every fsync."""
        harness.put_object(MOTO.client(), BUCKET, "rw/existing.bin", harness.make_data(3 * MiB + 1, 9))
        m = self.mount(MOTO, f"s3://{BUCKET}/rw")
        shadow_dir = harness.temp_dir(self.addCleanup, "warmfs-shadow-")
        rng = random.Random(11)
        for name, start in (("new.bin", b""), ("existing.bin", harness.make_data(3 * MiB + 1, 9))):
            shadow = shadow_dir / name
            shadow.write_bytes(start)
            flags = os.O_RDWR | (os.O_CREAT if not start else 0)
            fd = os.open(m.path / name, flags, 0o644)
            sfd = os.open(shadow, os.O_RDWR)
            try:
                for step in range(60):
                    op = rng.random()
                    size = os.fstat(sfd).st_size
                    if op < 0.6:
                        off = rng.randrange(0, size + 2 * MiB)
                        data = rng.randbytes(rng.choice([1, 100, 4096, 300_000, 2 * MiB + 7]))
                        os.pwrite(fd, data, off)
                        os.pwrite(sfd, data, off)
                    elif op < 0.75:
                        new = rng.randrange(0, size + MiB) if size else rng.randrange(0, MiB)
                        os.ftruncate(fd, new)
                        os.ftruncate(sfd, new)
                    elif op < 0.9:
                        data = rng.randbytes(rng.randrange(1, 200_000))
                        os.pwrite(fd, data, size)
                        os.pwrite(sfd, data, size)
                    else:
                        os.fsync(fd)
                        self.assertEqual(bucket_bytes(f"rw/{name}"), shadow.read_bytes(), f"{name} step {step}")
                    self.assertEqual(os.fstat(fd).st_size, os.fstat(sfd).st_size)
                    # Reads through the same mount see the writes at once.
                    probe = rng.randrange(0, max(1, os.fstat(sfd).st_size))
                    self.assertEqual(os.pread(fd, 70_000, probe), os.pread(sfd, 70_000, probe))
                os.fsync(fd)
            finally:
                os.close(fd)
                os.close(sfd)
            self.assertEqual((m.path / name).read_bytes(), shadow.read_bytes(), name)
            self.assertEqual(bucket_bytes(f"rw/{name}"), shadow.read_bytes(), name)
        self.assertEqual(open_uploads("rw/"), [])

    def test_overwrite_append_modify(self):
        c = MOTO.client()
        harness.put_object(c, BUCKET, "mod/a.txt", b"hello world\n")
        harness.put_object(c, BUCKET, "mod/b.txt", b"0123456789")
        m = self.mount(MOTO, f"s3://{BUCKET}/mod")
        with open(m.path / "a.txt", "w") as f:  # O_TRUNC
            f.write("replaced\n")
        self.assertEqual(bucket_bytes("mod/a.txt"), b"replaced\n")
        with open(m.path / "a.txt", "a") as f:
            f.write("and appended\n")
        self.assertEqual(bucket_bytes("mod/a.txt"), b"replaced\nand appended\n")
        with open(m.path / "b.txt", "r+b") as f:
            f.seek(3)
            f.write(b"xyz")
        self.assertEqual(bucket_bytes("mod/b.txt"), b"012xyz6789")
        os.truncate(m.path / "b.txt", 4)
        self.assertEqual(bucket_bytes("mod/b.txt"), b"012x")
        self.assertEqual((m.path / "b.txt").read_bytes(), b"012x")
        # An empty file: created by close() even with nothing written.
        open(m.path / "empty", "wb").close()
        self.assertEqual(bucket_bytes("mod/empty"), b"")
        os.utime(m.path / "b.txt", (1_600_000_000, 1_600_000_000))
        self.assertEqual(os.stat(m.path / "b.txt").st_mtime, 1_600_000_000)
        os.chmod(m.path / "b.txt", 0o600)  # kept in its metadata (test_attributes)
        self.assertEqual(os.stat(m.path / "b.txt").st_mode & 0o7777, 0o600)
        st = m.stats()
        self.assertIn("bucket_bytes_written", st)
        self.assertIn("uploads_in_flight", st)
        self.assertIn("upload_failures", st)


class Namespace(harness.WarmfsTestCase):
    def test_removing_a_directory_of_two_list_pages(self):
        """shutil.rmtree unlinks entries while it reads the directory, which comes page by
        page (docs/posix.md#listings): every key goes, and nothing removed shows again."""
        import shutil
        c = MOTO.client()
        keys = {f"big/d/f{i:04d}": b"x" for i in range(1050)}
        harness.put_many(c, BUCKET, keys, threads=12)
        m = self.mount(MOTO, f"s3://{BUCKET}/big")
        shutil.rmtree(m.path / "d")
        self.assertEqual(harness.list_keys(c, BUCKET, "big/"), [])  # boto3's own listing
        self.assertEqual(os.listdir(m.path), [])

    def test_mkdir_rmdir_rename_unlink(self):
        c = MOTO.client()
        harness.put_many(c, BUCKET, {"ns/d/one": b"1", "ns/d/sub/two": b"22", "ns/f": b"fff"})
        m = self.mount(MOTO, f"s3://{BUCKET}/ns")
        p = m.path
        os.mkdir(p / "new")
        self.assertTrue(bucket_has("ns/new/"))
        self.assertEqual(os.listdir(p / "new"), [])
        with self.assertRaises(FileExistsError):
            os.mkdir(p / "new")
        with self.assertRaises(FileExistsError):
            os.mkdir(p / "f")
        os.rmdir(p / "new")
        self.assertFalse(bucket_has("ns/new/"))
        with self.assertRaises(OSError) as cm:
            os.rmdir(p / "d")
        self.assertEqual(cm.exception.errno, errno.ENOTEMPTY)
        with self.assertRaises(NotADirectoryError):
            os.rmdir(p / "f")
        with self.assertRaises(IsADirectoryError):
            os.unlink(p / "d")
        # rename of a file: copy, then delete
        os.rename(p / "f", p / "g")
        self.assertFalse(bucket_has("ns/f"))
        self.assertEqual(bucket_bytes("ns/g"), b"fff")
        self.assertEqual((p / "g").read_bytes(), b"fff")
        # over an existing file
        (p / "h").write_bytes(b"hhhh")
        os.rename(p / "g", p / "h")
        self.assertEqual(bucket_bytes("ns/h"), b"fff")
        self.assertEqual(sorted(os.listdir(p)), ["d", "h"])
        # rename of a directory: every key under it
        os.rename(p / "d", p / "e")
        keys = sorted(harness.list_keys(c, BUCKET, "ns/"))
        self.assertEqual(keys, ["ns/e/one", "ns/e/sub/two", "ns/h"])
        self.assertEqual((p / "e" / "sub" / "two").read_bytes(), b"22")
        self.assertFalse((p / "d").exists())
        with self.assertRaises(IsADirectoryError):
            os.rename(p / "h", p / "e")
        with self.assertRaises(NotADirectoryError):
            os.rename(p / "e", p / "h")
        os.unlink(p / "e" / "one")
        os.unlink(p / "e" / "sub" / "two")
        self.assertEqual(harness.list_keys(c, BUCKET, "ns/e"), [])
        os.unlink(p / "h")
        self.assertEqual(harness.list_keys(c, BUCKET, "ns/"), [])

    def test_unsupported_operations(self):
        m = self.mount(MOTO, f"s3://{BUCKET}/uns")
        (m.path / "file").write_bytes(b"x")
        # Symlinks and FIFOs are kept as objects (test_attributes).
        cases = {
            "hard link": (lambda: os.link(m.path / "file", m.path / "hard"), errno.EPERM),
            "setxattr": (lambda: os.setxattr(m.path / "file", "user.k", b"v"), errno.ENOTSUP),
        }
        for name, (attempt, want) in cases.items():
            with self.subTest(op=name):
                with self.assertRaises(OSError) as cm:
                    attempt()
                self.assertEqual(cm.exception.errno, want, os.strerror(cm.exception.errno))
        self.assertEqual(sorted(harness.list_keys(MOTO.client(), BUCKET, "uns/")), ["uns/file"])

    def test_unlink_while_open_and_written(self):
        m = self.mount(MOTO, f"s3://{BUCKET}/gone")
        fd = os.open(m.path / "doomed", os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"z" * (20 * MiB))
        os.unlink(m.path / "doomed")
        os.write(fd, b"more")
        os.close(fd)
        self.assertFalse(bucket_has("gone/doomed"))
        self.assertEqual(open_uploads("gone/"), [])


class Failures(harness.WarmfsTestCase):
    timeout = 180.0

    def test_upload_part_500_then_retry(self):
        proxy = harness.start_server(self.addCleanup, harness.S3Proxy(MOTO))
        m = self.mount(proxy, f"s3://{BUCKET}/f500")
        proxy.set_faults([r"PUT:.*partNumber=.*:status=500"])
        data = harness.make_data(30 * MiB + 3, 21)
        fd = os.open(m.path / "ck.bin", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            with self.assertRaises(OSError) as cm:
                os.fsync(fd)
            self.assertEqual(cm.exception.errno, errno.EIO)
            self.assertFalse(bucket_has("f500/ck.bin"))
            self.assertEqual(open_uploads("f500/"), [], "a failed upload left its parts behind")
            self.assertGreaterEqual(m.stats()["upload_failures"], 1)
            proxy.clear_faults()
            os.fsync(fd)  # the staged data was kept: this retry succeeds
            self.assertEqual(bucket_bytes("f500/ck.bin"), data)
        finally:
            os.close(fd)
        self.assertEqual(open_uploads("f500/"), [])
        # A failing Complete (500 on POST ?uploadId) is a failure too.
        proxy.set_faults([r"POST:.*uploadId=.*:status=500"])
        fd = os.open(m.path / "ck2.bin", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            with self.assertRaises(OSError) as cm:
                os.fsync(fd)
            self.assertEqual(cm.exception.errno, errno.EIO)
            self.assertFalse(bucket_has("f500/ck2.bin"))
            self.assertEqual(open_uploads("f500/"), [])
            proxy.clear_faults()
        finally:
            os.close(fd)  # close() retries the upload and succeeds
        self.assertEqual(bucket_bytes("f500/ck2.bin"), data)

    def test_small_file_put_500_close_reports_eio(self):
        proxy = harness.start_server(self.addCleanup, harness.S3Proxy(MOTO))
        m = self.mount(proxy, f"s3://{BUCKET}/fput")
        proxy.set_faults([r"PUT:.*:status=500"])
        fd = os.open(m.path / "small", os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"tiny")
        with self.assertRaises(OSError) as cm:
            os.close(fd)
        self.assertEqual(cm.exception.errno, errno.EIO)
        proxy.clear_faults()
        self.assertFalse(bucket_has("fput/small"))

    def test_kill_9_during_large_write(self):
        """kill -9 part way through: the key holds the old object (or nothing); the next mount
        on the same staging dir aborts the multipart upload the dead one left open."""
        c = MOTO.client()
        old = harness.make_data(2 * MiB, 31)
        harness.put_object(c, BUCKET, "k9/existing.bin", old)
        staging = harness.temp_dir(self.addCleanup, "warmfs-staging-")
        m = self.mount(MOTO, f"s3://{BUCKET}/k9", args=["--staging-dir", str(staging)])
        for name in ("existing.bin", "new.bin"):
            fd = os.open(m.path / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, harness.make_data(40 * MiB, 32))
            # keep the descriptor open: the daemon dies with the upload half done
            self.addCleanup(_close_quietly, fd)
        deadline = time.monotonic() + 30
        while not open_uploads("k9/") and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertTrue(open_uploads("k9/"), "no multipart upload started in the background")
        m.kill_daemon(signal.SIGKILL)
        harness.wait_gone(m.pids, 10)
        self.assertEqual(bucket_bytes("k9/existing.bin"), old)
        self.assertFalse(bucket_has("k9/new.bin"))
        m.close()
        m2 = self.mount(MOTO, f"s3://{BUCKET}/k9", args=["--staging-dir", str(staging)])
        self.assertEqual(open_uploads("k9/"), [], "the next mount did not abort the orphaned upload")
        self.assertEqual((m2.path / "existing.bin").read_bytes(), old)


    def test_full_staging_disk_is_enospc(self):
        """A staging dir on a 16 MiB tmpfs: a write past its size fails with ENOSPC; the bucket
        keeps the old object until close, which uploads exactly the bytes write() accepted (as
        a local filesystem keeps them); the mount goes on working once space is free."""
        staging = harness.temp_dir(self.addCleanup, "warmfs-small-staging-")
        run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(staging)])
        self.addCleanup(subprocess.run, ["umount", "-l", str(staging)], check=False)
        c = MOTO.client()
        harness.put_object(c, BUCKET, "full/keep.bin", b"old")
        m = self.mount(MOTO, f"s3://{BUCKET}/full", args=["--staging-dir", str(staging)])
        fd = os.open(m.path / "keep.bin", os.O_WRONLY | os.O_TRUNC)
        accepted = 0
        try:
            with self.assertRaises(OSError) as cm:
                for _ in range(32):
                    accepted += os.write(fd, b"x" * MiB)
            self.assertEqual(cm.exception.errno, errno.ENOSPC)
            self.assertLessEqual(accepted, 16 * MiB)
            self.assertEqual(bucket_bytes("full/keep.bin"), b"old")
        finally:
            os.close(fd)
        self.assertEqual(bucket_bytes("full/keep.bin"), b"x" * accepted)
        (m.path / "small.txt").write_bytes(b"fits")
        self.assertEqual(bucket_bytes("full/small.txt"), b"fits")


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:  # the mount under it is gone
        pass


class ReadOnlyFlag(harness.WarmfsTestCase):
    def test_read_only_mount_still_refuses(self):
        m = self.mount(MOTO, f"s3://{BUCKET}", args=["--read-only"])
        with self.assertRaises(OSError) as cm:
            open(m.path / "nope", "wb")
        self.assertEqual(cm.exception.errno, errno.EROFS)


if __name__ == "__main__":
    unittest.main()
