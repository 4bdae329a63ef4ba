"""What the benchmarks share: a local origin holding one object of random bytes, and cache drops."""

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "integration"))
import harness  # noqa: E402

MiB = 1 << 20
BUCKET, KEY = "bench", "object.bin"


def drop_caches():
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


@contextlib.contextmanager
def origin_with_object(size_mib):
    """Yields (tmp dir, local copy, running S3rver) with s3://bench/object.bin of size_mib MiB."""
    with tempfile.TemporaryDirectory(prefix="warmfs-bench-") as tmp:
        tmp = Path(tmp)
        local = tmp / KEY
        with open(local, "wb") as f:
            for _ in range(size_mib):
                f.write(os.urandom(MiB))
        server = harness.S3rver()
        server.start()
        try:
            s3 = server.client()
            s3.create_bucket(Bucket=BUCKET)
            s3.upload_file(str(local), BUCKET, KEY)
            yield tmp, local, server
        finally:
            server.stop()


def mount_command(server, mnt, log, *extra):
    return [str(harness.WARMFS), "mount", f"s3://{BUCKET}", str(mnt), "--endpoint", server.endpoint,
            "--path-style", "--log-file", str(log), *extra]


def mount_env(tmp, server):
    return harness.base_env(tmp, server.key, server.secret, None)
