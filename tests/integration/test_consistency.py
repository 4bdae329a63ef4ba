"""An object replaced in the bucket is seen after the metadata TTL: new size and new bytes, never a
mix of old cached chunks and new ones. Mounted with --metadata-ttl 1; checks run 2.5 s after the
change (the TTL plus margin), once, without polling, so a slow refresh fails.
"""

import os
import time
import unittest

import harness
from harness import MiB

MOTO: harness.MotoServer
TTL = 1
AFTER_TTL = TTL + 1.5


def setUpModule():
    harness.require("warmfs", "fuse", "moto")
    global MOTO
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())


class Replaced(harness.WarmfsTestCase):
    def setUp(self):
        super().setUp()
        self.c = MOTO.client()
        self.bucket = "ttl-" + self._testMethodName.replace("_", "-")[5:40].strip("-")
        harness.create_bucket(self.c, self.bucket)

    def mount_ttl(self):
        return self.mount(MOTO, f"s3://{self.bucket}", args=["--metadata-ttl", str(TTL)])

    def replace_and_check(self, key, old, new):
        harness.put_object(self.c, self.bucket, key, old)
        m = self.mount_ttl()
        path = m.path / key
        self.assertEqual(os.stat(path).st_size, len(old))
        self.assertEqual(path.read_bytes(), old)
        harness.put_object(self.c, self.bucket, key, new)
        time.sleep(AFTER_TTL)
        self.assertEqual(os.stat(path).st_size, len(new), f"stale size\n{m.log_tail()}")
        got = path.read_bytes()
        self.assertEqual(len(got), len(new), f"stale length\n{m.log_tail()}")
        self.assertTrue(got == new, "stale or mixed bytes after the TTL "
                        f"(old matches: {got == old})\n{m.log_tail()}")
        return m

    def test_new_size_and_bytes(self):
        self.replace_and_check("file.txt", b"version one\n" * 100, b"version two, longer\n" * 117)

    def test_same_size_new_bytes(self):
        """Same size, new ETag: the kernel page cache and warmfs's chunks must both be dropped."""
        self.replace_and_check("same.bin", harness.make_data(64 * 1024, 1),
                               harness.make_data(64 * 1024, 2))

    def test_multi_chunk_object_replaced(self):
        m = self.replace_and_check("multi.bin", harness.make_data(3 * MiB + 17, 3),
                                   harness.make_data(3 * MiB + 17, 4))
        # and an open handle made after the change reads the new bytes at any offset
        with open(m.path / "multi.bin", "rb") as f:
            f.seek(2 * MiB)
            self.assertEqual(f.read(1000), harness.make_data(3 * MiB + 17, 4)[2 * MiB:2 * MiB + 1000])

    def test_shrunk_object(self):
        self.replace_and_check("shrink.bin", harness.make_data(2 * MiB, 5), b"tiny")

    def test_new_key_appears_and_deleted_key_goes(self):
        harness.put_object(self.c, self.bucket, "stays.txt", b"stays")
        harness.put_object(self.c, self.bucket, "goes.txt", b"goes")
        m = self.mount_ttl()
        self.assertEqual(sorted(os.listdir(m.path)), ["goes.txt", "stays.txt"])
        self.assertEqual((m.path / "goes.txt").read_bytes(), b"goes")
        harness.put_object(self.c, self.bucket, "new.txt", b"new")
        self.c.delete_object(Bucket=self.bucket, Key="goes.txt")
        time.sleep(AFTER_TTL)
        self.assertEqual(sorted(os.listdir(m.path)), ["new.txt", "stays.txt"], m.log_tail())
        self.assertEqual((m.path / "new.txt").read_bytes(), b"new")
        with self.assertRaises(FileNotFoundError):
            (m.path / "goes.txt").read_bytes()


if __name__ == "__main__":
    unittest.main()
