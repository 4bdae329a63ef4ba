"""With --read-only every write fails with EROFS, and the bucket is left as it was."""

import errno
import os
import unittest

import harness

MOTO: harness.MotoServer
OBJECTS = {"file.txt": b"do not touch\n", "dir/inner.txt": b"inner\n", "emptydir/": b""}


def setUpModule():
    harness.require("warmfs", "fuse", "moto")
    global MOTO
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    harness.create_bucket(MOTO.client(), "readonly")
    harness.put_many(MOTO.client(), "readonly", OBJECTS)


class ReadOnly(harness.WarmfsTestCase):
    def check_erofs(self, m, read_only_flag):
        p = m.path
        attempts = {
            "open O_WRONLY": lambda: os.open(p / "file.txt", os.O_WRONLY),
            "open O_RDWR": lambda: os.open(p / "file.txt", os.O_RDWR),
            "open O_WRONLY|O_TRUNC": lambda: os.open(p / "file.txt", os.O_WRONLY | os.O_TRUNC),
            "open O_WRONLY|O_APPEND": lambda: os.open(p / "file.txt", os.O_WRONLY | os.O_APPEND),
            "create a new file": lambda: os.open(p / "new.txt", os.O_WRONLY | os.O_CREAT, 0o644),
            "create in a subdir": lambda: os.open(p / "dir/new.txt",
                                                  os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644),
            "mkdir": lambda: os.mkdir(p / "newdir"),
            "rmdir": lambda: os.rmdir(p / "emptydir"),
            "unlink": lambda: os.unlink(p / "file.txt"),
            "rename": lambda: os.rename(p / "file.txt", p / "renamed.txt"),
            "truncate": lambda: os.truncate(p / "file.txt", 0),
            "symlink": lambda: os.symlink("file.txt", p / "link"),
            "hard link": lambda: os.link(p / "file.txt", p / "hardlink"),
            "chmod": lambda: os.chmod(p / "file.txt", 0o600),
            "utime": lambda: os.utime(p / "file.txt", (0, 0)),
        }
        for name, attempt in attempts.items():
            with self.subTest(op=name, read_only_flag=read_only_flag):
                with self.assertRaises(OSError) as cm:
                    fd = attempt()
                    if isinstance(fd, int):  # opened for writing: must not happen
                        os.close(fd)
                self.assertEqual(cm.exception.errno, errno.EROFS,
                                 f"{name}: {os.strerror(cm.exception.errno)}")
        self.assertEqual((p / "file.txt").read_bytes(), OBJECTS["file.txt"])
        c = MOTO.client()
        self.assertEqual(sorted(harness.list_keys(c, "readonly")), sorted(OBJECTS))
        for key, data in OBJECTS.items():
            self.assertEqual(c.get_object(Bucket="readonly", Key=key)["Body"].read(), data)

    def test_writes_fail_with_erofs_read_only_flag(self):
        self.check_erofs(self.mount(MOTO, "s3://readonly", args=["--read-only"]), True)


if __name__ == "__main__":
    unittest.main()
