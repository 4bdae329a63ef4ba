"""S3fsMount: s3fs-fuse (the Debian package) mounting a bucket of a test server, for
interoperability tests and for tools/pjdfstest's comparison runs. A missing s3fs raises
HarnessError (a failure, never a skip); close() always unmounts."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import harness


class S3fsMount:
    def __init__(self, server, bucket: str, allow_other: bool = False,
                 stat_cache: bool = True) -> None:
        if shutil.which("s3fs", path=harness.BASE_PATH) is None:
            raise harness.HarnessError(
                "s3fs is missing (apt-get install s3fs; tools/lib/install-deps.sh installs it)")
        self.tmp = Path(tempfile.mkdtemp(prefix="warmfs-s3fs-"))
        self.path = self.tmp / "mnt"
        self.path.mkdir()
        passwd = self.tmp / "passwd"
        passwd.write_text(f"{server.key}:{server.secret}\n")
        passwd.chmod(0o600)
        opts = f"url={server.endpoint},use_path_request_style,passwd_file={passwd},dbglevel=err"
        if allow_other:
            opts += ",allow_other"
        if not stat_cache:  # what another client changed shows at once
            opts += ",max_stat_cache_size=0"
        run = subprocess.run(["s3fs", bucket, str(self.path), "-o", opts], capture_output=True,
                             text=True, timeout=60, env={"PATH": harness.BASE_PATH,
                                                         "HOME": str(self.tmp)})
        if run.returncode != 0:
            raise harness.HarnessError(f"s3fs mount failed: {run.stderr.strip()}")
        deadline = time.monotonic() + 30
        while not harness.is_mounted(self.path):
            if time.monotonic() > deadline:
                self.close()
                raise harness.HarnessError("s3fs did not mount within 30 s")
            time.sleep(0.1)

    def close(self) -> None:
        harness.force_unmount(self.path)
        if not harness.is_mounted(self.path):
            shutil.rmtree(self.tmp, ignore_errors=True)


def mount(cleanup, server, bucket: str, **kw) -> S3fsMount:
    """An s3fs mount, closed by `cleanup` (addCleanup and the like)."""
    m = S3fsMount(server, bucket, **kw)
    cleanup(m.close)
    return m
