"""What the benchmarks share: a local origin holding one object of random bytes, cache drops, a
timed sequential read (dd), and the servers and mounts of tools/lib/warmfs_harness.py (the
integration suite's harness), as `harness`."""

import contextlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
import warmfs_harness as harness  # noqa: E402

MiB = 1 << 20
BUCKET, KEY = "bench", "object.bin"


def dd_argv(path) -> list[str]:
    """dd reading path whole, in 1 MiB blocks, to /dev/null (its figures on stderr)."""
    return ["dd", f"if={path}", "of=/dev/null", "bs=1M"]


def parse_dd(stderr: str) -> tuple[int, float]:
    """(bytes, seconds) from dd's closing line: "N bytes (...) copied, S s, R MB/s"."""
    m = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", stderr)
    if m is None:
        raise RuntimeError(f"dd printed no transfer line: {stderr.strip()[-300:]}")
    return int(m.group(1)), float(m.group(2))


def dd_read(path, timeout: float | None = None) -> tuple[int, float]:
    """Reads path whole with dd; returns (bytes, seconds) as dd measured them."""
    out = subprocess.run(dd_argv(path), capture_output=True, text=True, check=True,
                         timeout=timeout).stderr
    return parse_dd(out)


def dd_mbps(path) -> float:
    """MB/s of one sequential read of path with dd."""
    nbytes, secs = dd_read(path)
    return nbytes / secs / 1e6


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
