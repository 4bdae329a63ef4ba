"""The systems the benchmark mounts and the FUSE ceiling, each with mount() / unmount() / pids().

Every mount made here is unmounted in unmount(), which never raises and is always called from a
`finally`: fusermount3 -u, then -uz, then umount -l; then the process we started is stopped by
its PID (SIGTERM, then SIGKILL). Each system's local cache lives in its own directory, wiped
before every fresh (cold) mount.

How the peers are configured (the flags are documented in docs/benchmarks.md too):
- s3fs-fuse: path-style URL to the proxy, a passwd file, use_cache=<dir> (its disk cache),
  parallel_count=8 and multipart_size=64 (MiB) for uploads, multireq_max=16 for parallel range
  reads, norenameapi (meant to keep a rename of a file over 25 MB off UploadPartCopy, which
  s3rver lacks; s3fs 1.90 still uses a multipart copy for the 512 MiB checkpoint, and the
  rename fails with EIO), a 60 s stat cache large enough for the tree, enable_noobj_cache, kernel_cache (the
  page cache survives opens, as warmfs's keep_cache).
- rclone mount: an s3 remote with provider=Other, --vfs-cache-mode full (a disk cache, needed
  for writes with fsync), --vfs-read-chunk-size 16M doubling without limit, --buffer-size 32M,
  --vfs-read-ahead 256M, --transfers 8, --use-server-modtime (a listing is enough for ls -l;
  without it rclone sends a HEAD per file), 60 s attribute and 1 h directory caches,
  --s3-upload-concurrency 8 with 16M chunks.
- warmfs: --no-object-attrs (a writable mount otherwise reads each object's stored mode,
  owner and times with a HEAD on its first lookup; the same trade as rclone's
  --use-server-modtime).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from benchlib import harness

REPO = Path(__file__).resolve().parents[2]
CEILING_BIN = REPO / "build" / "tools" / "fuse-ceiling" / "fuse-ceiling"
MOUNT_TIMEOUT = 60.0


def _wait_mounted(path: Path, proc: subprocess.Popen | None, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if harness.is_mounted(path):
            with contextlib.suppress(OSError):
                os.stat(path)
                return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"mount process exited {proc.returncode}; log:\n{harness._tail(log, 15)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} not mounted after {timeout:.0f}s; log:\n{harness._tail(log, 15)}")
        time.sleep(0.1)


class MountedSystem:
    """A FUSE system mounted on work/<name>/mnt with its cache in work/<name>/cache."""

    name = "?"
    has_stats = False

    def __init__(self, work: Path, origin, logs: Path, extra_args: list[str]):
        self.dir = work / self.name
        self.mnt = self.dir / "mnt"
        self.cache = self.dir / "cache"
        self.home = self.dir / "home"
        self.origin = origin
        self.logs = logs
        self.extra_args = extra_args
        self.proc: subprocess.Popen | None = None
        self.mount_count = 0

    @property
    def root(self) -> Path:
        return self.mnt

    def version(self) -> str:
        return "?"

    def mount(self) -> None:
        """A fresh mount with an empty cache."""
        self.unmount()
        shutil.rmtree(self.cache, ignore_errors=True)
        self.remount()

    def remount(self) -> None:
        """A mount that keeps the last one's cache dir (what it cached and indexed)."""
        self.unmount()
        for d in (self.mnt, self.cache, self.home):
            d.mkdir(parents=True, exist_ok=True)
        self.mount_count += 1
        self.log = self.logs / f"{self.name}-{self.mount_count:02d}.log"
        self._start()

    def _start(self) -> None:
        raise NotImplementedError

    def pids(self) -> list[int]:
        return [self.proc.pid] if self.proc is not None and self.proc.poll() is None else []

    def unmount(self) -> None:
        """Never raises. Unmounts, then stops the daemon we started."""
        pids = self.pids()
        if harness.is_mounted(self.mnt):
            harness.force_unmount(self.mnt)
        if self.proc is not None:
            with contextlib.suppress(Exception):
                self.proc.wait(15)
            with contextlib.suppress(Exception):
                harness._stop_popen(self.proc, grace=5)
            self.proc = None
        for pid in harness.wait_gone(pids, 10):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if harness.is_mounted(self.mnt):
            print(f"bench: WARNING {self.mnt} is still mounted", flush=True)

    def stats(self) -> dict | None:
        return None


class Warmfs(MountedSystem):
    name = "warmfs"
    has_stats = True
    memory_cache_mib = 2048
    ssd_tier = True  # False: the memory tier only (tools/bench/cold_pairs.py's warmfs-mem)
    cache_size = "16G"  # the SSD tier (tools/bench/run's epochs workload sets a small one)

    def __init__(self, *a, memory_cache_mib: int = 2048, **kw):
        super().__init__(*a, **kw)
        self.memory_cache_mib = memory_cache_mib
        self.daemon_pid: int | None = None

    def version(self) -> str:
        rev = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                             capture_output=True, text=True).stdout.strip()
        if os.environ.get("WARMFS_BIN"):  # another build than this checkout's
            return f"warmfs from {os.environ['WARMFS_BIN']} (checkout at {rev})"
        return f"warmfs {rev}"

    def env(self) -> dict:
        return harness.base_env(self.home, harness.S3RVER_KEY, harness.S3RVER_SECRET)

    def _start(self) -> None:
        harness.require("warmfs", "fuse")
        args = ["mount", f"s3://bench", str(self.mnt), "--endpoint", self.origin.endpoint,
                "--path-style", "--region", "us-east-1", "--log-file", str(self.log),
                "--memory-cache-size", f"{self.memory_cache_mib}M",
                # Listings answer ls -l, as rclone's --use-server-modtime: no HEAD per object
                # for attributes a writable mount reads by default (docs/posix.md).
                "--no-object-attrs", *self.extra_args]
        if self.ssd_tier:
            args += ["--cache-dir", str(self.cache), "--cache-size", self.cache_size]
        run = harness.run_cli(args, self.env(), timeout=MOUNT_TIMEOUT)
        if run.rc != 0:
            raise RuntimeError(f"warmfs mount failed:\n{run.describe()}\n{harness._tail(self.log, 15)}")
        self.daemon_pid = int(os.getxattr(self.mnt, "user.warmfs.pid").decode().strip())

    def daemon_pids(self) -> list[int]:
        if self.daemon_pid and harness.pid_alive(self.daemon_pid):
            return [self.daemon_pid]
        return []

    def pids(self) -> list[int]:
        return self.daemon_pids()

    def unmount(self) -> None:
        pids = self.daemon_pids()  # the mount's own processes: what unmounting ends
        if harness.is_mounted(self.mnt):
            with contextlib.suppress(Exception):
                harness.run_cli(["unmount", str(self.mnt)], self.env(), timeout=30)
            harness.force_unmount(self.mnt)
        for pid in harness.wait_gone(pids, 10):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.daemon_pid = None

    def stats(self) -> dict | None:
        run = harness.run_cli(["stats", str(self.mnt), "--json"], self.env(), timeout=15)
        return json.loads(run.stdout) if run.rc == 0 else None


class WarmfsServed(Warmfs):
    """warmfs with no cache dir of its own, reading through a `warmfs serve` on loopback: the
    shared tier of a node without a local SSD (docs/cache-server.md). The server starts with the
    first mount and keeps its SSD tier for the whole run; it has a memory tier of
    SERVER_MEMORY_MIB, so its hits come mostly from its SSD, as a shared tier's would. The mount
    has warmfs's memory tier and nothing else."""

    name = "served"
    ssd_tier = False
    SERVER_MEMORY_MIB = 256

    def __init__(self, *a, shared: "WarmfsServed | None" = None, **kw):
        if shared is not None:  # another mount of the same server, in a directory of its own
            self.name = f"served-{id(self):x}"
        super().__init__(*a, **kw)
        self.shared = shared
        self.server: subprocess.Popen | None = None
        self.server_url = ""
        self.token = self.dir / "server-token"
        self.server_log = self.logs / "served-server.log"

    def version(self) -> str:
        return super().version() + " through `warmfs serve`"

    def sibling(self) -> "WarmfsServed":
        """Another mount reading through this one's server (started by whichever mounts first)."""
        return WarmfsServed(self.dir.parent, self.origin, self.logs, self.extra_args,
                            memory_cache_mib=self.memory_cache_mib, shared=self)

    def start_server(self) -> None:
        if self.shared is not None:
            self.shared.start_server()
            self.server_url, self.token = self.shared.server_url, self.shared.token
            return
        if self.server is not None and self.server.poll() is None:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        self.token.write_text(os.urandom(16).hex())
        self.token.chmod(0o600)
        cache = self.dir / "server-ssd"
        shutil.rmtree(cache, ignore_errors=True)
        port = harness.free_port()
        self.server_url = f"http://127.0.0.1:{port}"
        self.server = subprocess.Popen(
            [str(harness.WARMFS), "serve", "--bucket", "bench", "--listen", f"127.0.0.1:{port}",
             "--endpoint", self.origin.endpoint, "--path-style", "--region", "us-east-1",
             "--cache-dir", str(cache), "--cache-size", self.cache_size,
             "--memory-cache-size", f"{self.SERVER_MEMORY_MIB}M", "--token-file", str(self.token)],
            env=self.env(), stdin=subprocess.DEVNULL, stdout=open(self.server_log, "ab"),
            stderr=subprocess.STDOUT, start_new_session=True)
        harness.wait_port(port, self.server, self.server_log, MOUNT_TIMEOUT)

    def stop_server(self) -> None:
        """Never raises."""
        if self.server is not None:
            with contextlib.suppress(Exception):
                harness._stop_popen(self.server, grace=10)
            self.server = None

    def pids(self) -> list[int]:
        """The mount's daemon and the server: both spend CPU on every read."""
        alive = self.server is not None and self.server.poll() is None
        return super().pids() + ([self.server.pid] if alive else [])

    def _start(self) -> None:
        self.start_server()
        saved = self.extra_args
        self.extra_args = [*saved, "--cache-server", self.server_url, "--token-file", str(self.token)]
        try:
            super()._start()
        finally:
            self.extra_args = saved


class S3fs(MountedSystem):
    name = "s3fs"

    def version(self) -> str:
        if shutil.which("s3fs") is None:
            return "s3fs absent"
        out = subprocess.run(["s3fs", "--version"], capture_output=True, text=True).stdout
        return out.splitlines()[0].replace("Amazon Simple Storage Service File System ", "s3fs ") if out else "s3fs ?"

    def _start(self) -> None:
        if shutil.which("s3fs") is None:
            raise RuntimeError("s3fs is not installed (tools/lib/install-bench-deps.sh)")
        passwd = self.home / "passwd-s3fs"
        passwd.write_text(f"{harness.S3RVER_KEY}:{harness.S3RVER_SECRET}\n")
        passwd.chmod(0o600)
        opts = [f"url={self.origin.endpoint}", "use_path_request_style", f"passwd_file={passwd}",
                f"use_cache={self.cache}", "parallel_count=8", "multipart_size=64",
                "multireq_max=16", "norenameapi", "max_stat_cache_size=100000", "stat_cache_expire=60",
                "enable_noobj_cache", "kernel_cache", "endpoint=us-east-1", "dbglevel=warn"]
        argv = ["s3fs", "bench", str(self.mnt), "-f"]
        for o in opts:
            argv += ["-o", o]
        argv += self.extra_args
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=open(self.log, "wb"),
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     env={"PATH": harness.BASE_PATH, "HOME": str(self.home)})
        _wait_mounted(self.mnt, self.proc, self.log, MOUNT_TIMEOUT)


class Rclone(MountedSystem):
    name = "rclone"

    def version(self) -> str:
        if shutil.which("rclone") is None:
            return "rclone absent"
        out = subprocess.run(["rclone", "version"], capture_output=True, text=True).stdout
        return out.splitlines()[0] if out else "rclone ?"

    def _start(self) -> None:
        if shutil.which("rclone") is None:
            raise RuntimeError("rclone is not installed (tools/lib/install-bench-deps.sh)")
        conf = self.home / "rclone.conf"
        conf.write_text("[bench]\ntype = s3\nprovider = Other\nenv_auth = false\n"
                        f"access_key_id = {harness.S3RVER_KEY}\nsecret_access_key = {harness.S3RVER_SECRET}\n"
                        f"endpoint = {self.origin.endpoint}\nregion = us-east-1\nforce_path_style = true\n")
        argv = ["rclone", "mount", "bench:bench", str(self.mnt), "--config", str(conf),
                "--cache-dir", str(self.cache), "--vfs-cache-mode", "full",
                "--vfs-cache-max-size", "20G", "--vfs-read-chunk-size", "16M",
                "--vfs-read-chunk-size-limit", "off", "--buffer-size", "32M",
                "--vfs-read-ahead", "256M", "--transfers", "8", "--checkers", "8",
                "--use-server-modtime", "--attr-timeout", "60s", "--dir-cache-time", "1h",
                "--s3-upload-concurrency", "8", "--s3-chunk-size", "16M",
                "--log-file", str(self.log), "--log-level", "NOTICE", *self.extra_args]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                     stdout=open(str(self.log) + ".out", "wb"),
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     env={"PATH": harness.BASE_PATH, "HOME": str(self.home)})
        _wait_mounted(self.mnt, self.proc, self.log, MOUNT_TIMEOUT)


class Ceiling(MountedSystem):
    """tools/fuse-ceiling: `files` files f0.. of `size_mib` MiB each, served from memory."""
    name = "ceiling"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.size_mib = 1
        self.files = 1

    def version(self) -> str:
        out = subprocess.run(["pkg-config", "--modversion", "fuse3"], capture_output=True, text=True)
        return f"libfuse {out.stdout.strip()}"

    def _start(self) -> None:
        if not CEILING_BIN.exists():
            raise RuntimeError(f"{CEILING_BIN} missing (ninja -C build)")
        ready = self.dir / "ready"
        ready.unlink(missing_ok=True)
        self.proc = subprocess.Popen([str(CEILING_BIN), str(self.mnt), "--size", str(self.size_mib),
                                      "--files", str(self.files), "--ready-file", str(ready)],
                                     stdin=subprocess.DEVNULL, stdout=open(self.log, "wb"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + MOUNT_TIMEOUT
        while not ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"fuse-ceiling did not start; log:\n{harness._tail(self.log, 15)}")
            time.sleep(0.05)


MOUNTED = {"warmfs": Warmfs, "served": WarmfsServed, "s3fs": S3fs, "rclone": Rclone}
