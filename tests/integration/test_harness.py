"""The harness itself: servers start, enforce what the other tests rely on, and stop by PID.

These run without the warmfs binary, so a broken fixture shows up as its own failure rather than
as a confusing failure of every warmfs test.
"""

import os
import unittest

import botocore.exceptions

import harness
from harness import MiB


class MotoFixture(unittest.TestCase):
    def test_auth_enforced_and_bucket_usable(self):
        moto = harness.start_server(self.addCleanup, harness.MotoServer())
        c = moto.client()
        harness.create_bucket(c, "harness-check")
        data = harness.make_data(3 * MiB + 5, seed=1)
        harness.put_object(c, "harness-check", "dir/obj.bin", data)
        got = c.get_object(Bucket="harness-check", Key="dir/obj.bin",
                           Range=f"bytes={MiB}-{2 * MiB - 1}")["Body"].read()
        self.assertEqual(got, data[MiB:2 * MiB])
        for key, secret, code in [(moto.key, "wrong", "SignatureDoesNotMatch"),
                                  ("AKIAUNKNOWNKEY000000", "wrong", "InvalidAccessKeyId")]:
            with self.subTest(code=code):
                with self.assertRaises(botocore.exceptions.ClientError) as cm:
                    moto.client(key, secret).list_objects_v2(Bucket="harness-check")
                self.assertEqual(cm.exception.response["Error"]["Code"], code)
        with self.assertRaises(botocore.exceptions.ClientError) as cm:
            c.list_objects_v2(Bucket="no-such-bucket-here")
        self.assertEqual(cm.exception.response["Error"]["Code"], "NoSuchBucket")

        pid = moto.proc.pid
        moto.stop()
        self.assertFalse(harness.pid_alive(pid), "moto still running after stop()")

    def test_sigv4_checked_on_encoded_queries_and_keys(self):
        """Correct signatures pass for prefix=/delimiter= queries and awkward keys; a request
        signed with moto's old, non-AWS canonical form (raw "/" in the query) is refused."""
        import urllib.error
        import urllib.request
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        moto = harness.start_server(self.addCleanup, harness.MotoServer())
        c = moto.client()
        harness.create_bucket(c, "harness-sig")
        keys = ["dir/plain.txt", "dir/sp ace.txt", "dir/pct%41%2F.txt", "dir/plus+eq=.txt",
                "dir/star*(paren).txt", "dir/ünïcødé/日本.txt", "dir/tilde~,;:@$&'!.txt"]
        for k in keys:
            with self.subTest(key=k):
                harness.put_object(c, "harness-sig", k, k.encode())
                self.assertEqual(c.get_object(Bucket="harness-sig", Key=k)["Body"].read(),
                                 k.encode())
        listing = c.list_objects_v2(Bucket="harness-sig", Prefix="dir/", Delimiter="/")
        self.assertEqual(sorted(o["Key"] for o in listing["Contents"]),
                         sorted(k for k in keys if k.count("/") == 1))
        self.assertEqual([p["Prefix"] for p in listing["CommonPrefixes"]], ["dir/ünïcødé/"])
        self.assertEqual(len(harness.list_keys(c, "harness-sig", "dir/ü")), 1)

        def send(signed_query: str, sent_query: str, secret: str) -> int:
            req = AWSRequest(method="GET", url=f"{moto.endpoint}/harness-sig?{signed_query}")
            S3SigV4Auth(Credentials(moto.key, secret), "s3", harness.REGION).add_auth(req)
            r = urllib.request.Request(f"{moto.endpoint}/harness-sig?{sent_query}",
                                       headers=dict(req.headers))
            try:
                return urllib.request.urlopen(r, timeout=10).status
            except urllib.error.HTTPError as e:
                return e.code

        spec = "delimiter=%2F&list-type=2&prefix=dir%2F"
        self.assertEqual(send(spec, spec, moto.secret), 200)
        self.assertEqual(send(spec, "delimiter=/&list-type=2&prefix=dir/", moto.secret), 200)
        self.assertEqual(send("delimiter=/&list-type=2&prefix=dir/", spec, moto.secret), 403)
        self.assertEqual(send(spec, spec, "wrong"), 403)
        self.assertEqual(send(spec, "delimiter=%2F&list-type=2&prefix=dix%2F", moto.secret), 403)

    def test_no_auth_mode_accepts_anything(self):
        moto = harness.start_server(self.addCleanup, harness.MotoServer(auth=False))
        harness.create_bucket(moto.client("any", "thing"), "harness-open")
        self.assertEqual(harness.list_keys(moto.client("other", "keys"), "harness-open"), [])

    def test_paged_listing(self):
        moto = harness.start_server(self.addCleanup, harness.MotoServer())
        c = moto.client()
        harness.create_bucket(c, "harness-pages")
        harness.put_many(c, "harness-pages", {f"p/{i:04d}": b"x" for i in range(7)})
        pages = list(c.get_paginator("list_objects_v2").paginate(
            Bucket="harness-pages", Prefix="p/", Delimiter="/", PaginationConfig={"PageSize": 2}))
        self.assertEqual(len(pages), 4)
        self.assertEqual(sum(len(p["Contents"]) for p in pages), 7)


class S3rverFixture(unittest.TestCase):
    def test_serves_boto3(self):
        srv = harness.start_server(self.addCleanup, harness.S3rver())
        c = srv.client()
        harness.create_bucket(c, "harness-check")
        data = harness.make_data(2 * MiB + 1, seed=2)
        key = "naïve dir/a+b=c %41.bin"
        harness.put_object(c, "harness-check", key, data)
        self.assertEqual(c.get_object(Bucket="harness-check", Key=key)["Body"].read(), data)
        self.assertEqual(harness.list_keys(c, "harness-check"), [key])
        # Truncated listings and continuation tokens (DES tokens: needs the legacy provider).
        harness.put_many(c, "harness-check", {f"page/{i:04d}": b"p" for i in range(7)})
        page = c.list_objects_v2(Bucket="harness-check", Prefix="page/", MaxKeys=1)
        self.assertTrue(page["IsTruncated"])
        pages = c.get_paginator("list_objects_v2").paginate(
            Bucket="harness-check", Prefix="page/", PaginationConfig={"PageSize": 2})
        self.assertEqual(sum(len(p["Contents"]) for p in pages), 7)
        pid = srv.proc.pid
        srv.stop()
        self.assertFalse(harness.pid_alive(pid), "s3rver still running after stop()")


class Watchdog(harness.WarmfsTestCase):
    """A daemon that stops answering makes the blocked call fail instead of hanging the suite."""

    timeout = 4.0

    def test_hung_daemon_is_killed(self):
        import errno
        import signal
        import time
        harness.require("warmfs", "fuse", "moto")
        moto = harness.start_server(self.addCleanup, harness.MotoServer(auth=False))
        harness.create_bucket(moto.client(), "harness-hang")
        harness.put_object(moto.client(), "harness-hang", "f.bin", b"x" * 1000)
        m = self.mount(moto, "s3://harness-hang")
        self.assertTrue(m.pids, "no daemon found for the mount")
        for pid in m.pids:
            os.kill(pid, signal.SIGSTOP)
        start = time.monotonic()
        with self.assertRaises(OSError) as cm:
            (m.path / "f.bin").read_bytes()
        self.assertIn(cm.exception.errno, (errno.ENOTCONN, errno.ECONNABORTED, errno.EIO))
        self.assertLess(time.monotonic() - start, 15)
        self.assertEqual(harness.wait_gone(m.pids, 5), [])
        m.close()
        self.assertFalse(harness.is_mounted(m.path))


class Model(unittest.TestCase):
    def test_expected_tree(self):
        keys = {"a/b/c.txt": 3, "m/": 0, "m/x": 1, "bad//k": 1, "a/./d": 1, "n" * 256: 1,
                "top": 7, "a/../e": 2}
        self.assertEqual(harness.expected_tree(keys), {
            "a": ("d",), "a/b": ("d",), "a/b/c.txt": ("f", 3), "m": ("d",), "m/x": ("f", 1),
            "top": ("f", 7)})
        self.assertEqual(harness.expected_tree(keys, "a/"), {"b": ("d",), "b/c.txt": ("f", 3)})

    def test_mount_table_parsing(self):
        self.assertTrue(harness.is_mounted("/proc"))
        self.assertFalse(harness.is_mounted(os.path.dirname(harness.__file__)))
        self.assertEqual(harness._unescape_mount_field(r"/tmp/a\040b"), "/tmp/a b")


if __name__ == "__main__":
    unittest.main()
