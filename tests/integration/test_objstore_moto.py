"""S3ObjectStore's writes against moto with authentication on, through the C++ unit test
"writes against moto_server" ([moto], hidden from the plain unit run, which has no server).

The unit test puts, uploads in parts, aborts, copies (in parts above its threshold) and
deletes with warmfs's own S3 code, and writes a manifest of what it left. This test makes the
bucket, runs it with WARMFS_MOTO_* pointing at the server, and checks the bucket with boto3:
every object's size and SHA-256 against the manifest, the deleted keys gone, no multipart
upload left open.
"""

import hashlib
import subprocess
import unittest
from pathlib import Path

import harness

UNIT_TESTS = harness.REPO / "build" / "tests" / "warmfs_unit_tests"
MOTO: harness.MotoServer
BUCKET = "warmfs-moto"


def setUpModule():
    if not UNIT_TESTS.exists():
        raise harness.HarnessError(f"{UNIT_TESTS} is missing (tools/test builds it)")
    harness.require("moto")
    global MOTO
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    harness.create_bucket(MOTO.client(), BUCKET)


class Writes(harness.WarmfsTestCase):
    timeout = 300.0

    def test_writes_of_the_s3_store_as_boto3_sees_them(self):
        tmp = harness.temp_dir(self.addCleanup, "warmfs-moto-writes-")
        manifest = tmp / "manifest.txt"
        env = {"PATH": harness.BASE_PATH, "HOME": str(tmp), "LANG": "C.UTF-8",
               "AWS_EC2_METADATA_DISABLED": "true",
               "WARMFS_MOTO_ENDPOINT": MOTO.endpoint, "WARMFS_MOTO_BUCKET": BUCKET,
               "WARMFS_MOTO_KEY": MOTO.key, "WARMFS_MOTO_SECRET": MOTO.secret,
               "WARMFS_MOTO_MANIFEST": str(manifest)}
        run = subprocess.run([str(UNIT_TESTS), "[moto]", "-r", "compact"], env=env,
                             capture_output=True, text=True, timeout=240)
        self.assertEqual(run.returncode, 0, run.stdout[-3000:] + run.stderr[-3000:])
        self.assertIn("Passed", run.stdout)
        s3 = MOTO.client()
        entries = [line.rsplit(" ", 2) for line in manifest.read_text().splitlines()]
        self.assertGreater(len(entries), 3, manifest.read_text())
        for key, size, digest in entries:
            with self.subTest(key=key):
                body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
                self.assertEqual(len(body), int(size))
                self.assertEqual(hashlib.sha256(body).hexdigest(), digest)
        left = s3.list_objects_v2(Bucket=BUCKET, Prefix="del/").get("Contents", [])
        self.assertEqual(left, [], "deleted keys are still in the bucket")
        self.assertEqual(s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []), [],
                         "a multipart upload was left open")


if __name__ == "__main__":
    unittest.main()
