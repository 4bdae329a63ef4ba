"""Keys with spaces, unicode, %, +, = and other characters that need URL encoding: listed, stat-ed
and read byte-exact. Run against s3rver (a second S3 implementation) and against moto with
authentication on, where every such request's SigV4 signature is checked (see
tools/lib/moto_server.py for why stock moto could not check these).

s3rver drops folders that hold only subfolders from listings: every folder here holds a file.
"""

import os
import unittest

import harness

NAMES = [
    "with space.txt",
    "  leading and trailing spaces  .txt",
    "dir with space/inner file.txt",
    "unicode-日本語.txt",
    "émoji-😀/ok.txt",
    "Ελληνικά/κείμενο.txt",
    "percent%41%2F%%.txt",
    "plus+sign+.txt",
    "equals=sign==.txt",
    "amp&semi;colon:at@dollar$comma,.txt",
    "quote'bang!star*paren(1)[2]{3}.txt",
    "tilde~caret^backtick`hash#question?.txt",
    "a+b=c %20 d/x+y=z.bin",
]


def _objects(prefix="names/"):
    return {prefix + n: (n * 3).encode() for n in NAMES}


class _NameChecks:
    server: harness._Server
    bucket: str

    @classmethod
    def upload(cls):
        c = cls.server.client()
        harness.create_bucket(c, cls.bucket)
        cls.objects = _objects()
        harness.put_many(c, cls.bucket, cls.objects)
        got = sorted(harness.list_keys(c, cls.bucket))
        if got != sorted(cls.objects):
            raise harness.HarnessError(f"{cls.server.name} changed keys: {got}")

    def test_listing(self):
        m = self.mount(self.server, f"s3://{self.bucket}")
        want = {n.split("/")[0] for n in NAMES}
        self.assertEqual(sorted(os.listdir(m.path / "names")), sorted(want))
        self.assertEqual(harness.walk_tree(m.path),
                         harness.expected_tree({k: len(v) for k, v in self.objects.items()}))

    def test_read_each(self):
        m = self.mount(self.server, f"s3://{self.bucket}")
        for key, data in self.objects.items():
            with self.subTest(key=key):
                self.assertEqual(os.stat(m.path / key).st_size, len(data))
                self.assertEqual((m.path / key).read_bytes(), data, m.log_tail())

    def test_prefix_mount_with_encoded_prefix(self):
        m = self.mount(self.server, f"s3://{self.bucket}/names/a+b=c %20 d")
        self.assertEqual(os.listdir(m.path), ["x+y=z.bin"])
        self.assertEqual((m.path / "x+y=z.bin").read_bytes(),
                         self.objects["names/a+b=c %20 d/x+y=z.bin"])


class OnS3rver(_NameChecks, harness.WarmfsTestCase):
    bucket = "names"

    @classmethod
    def setUpClass(cls):
        harness.require("warmfs", "fuse", "s3rver")
        cls.server = harness.start_server(cls.addClassCleanup, harness.S3rver())
        cls.upload()


class OnMotoWithAuth(_NameChecks, harness.WarmfsTestCase):
    bucket = "names"

    @classmethod
    def setUpClass(cls):
        harness.require("warmfs", "fuse", "moto")
        cls.server = harness.start_server(cls.addClassCleanup, harness.MotoServer())
        cls.upload()


if __name__ == "__main__":
    unittest.main()
