"""Helpers for the SSD cache tier tests (test_ssd_cache): cache dirs and tmpfs mounts that are
always removed, dropping the kernel page cache, unmounting with `warmfs unmount`, reading files
through a mount and comparing their sha256, and the stats the SSD tier adds.

Nothing here skips: a missing prerequisite (root for drop_caches and tmpfs, --cache-dir in the
binary) raises harness.HarnessError, so the tests that need it fail loudly.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import harness
from harness import MiB

DISK_STATS = ["disk_cache", "disk_hit_bytes", "disk_hit_ratio", "disk_write_bytes",
              "cache_used_bytes", "cache_capacity_bytes", "evicted_bytes", "corrupt_chunks",
              "disk_errors", "memory_hit_ratio"]


def require_cache_dir_support() -> None:
    """Raise unless `warmfs mount --help` lists --cache-dir (the SSD tier is wired)."""
    harness.require("warmfs")
    run = harness.run_cli(["mount", "--help"], harness.base_env(Path("/nonexistent")), timeout=15)
    if "--cache-dir" not in run.stdout + run.stderr:
        raise harness.HarnessError(f"{harness.WARMFS} has no `mount --cache-dir` (the SSD cache "
                                   f"tier is not wired in this build)\n{run.describe()}")
    if os.geteuid() != 0:
        raise harness.HarnessError("the SSD cache tests need root (drop_caches, tmpfs mounts)")


def drop_page_cache() -> None:
    """Drop the kernel's clean page cache, so the next reads reach warmfs."""
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:
        raise harness.HarnessError(f"cannot drop the page cache (/proc/sys/vm/drop_caches): {e}")


def temp_dir(cleanup, prefix: str = "warmfs-ssd-") -> Path:
    """A fresh directory, removed (with everything in it) by `cleanup`."""
    return harness.temp_dir(cleanup, prefix)


def mount_tmpfs(cleanup, path: Path, size: str, read_only: bool = False) -> Path:
    """Mount a tmpfs of `size` at path (created if needed), unmounted by `cleanup` (registered
    first, so a mount that half-worked is undone too)."""
    path.mkdir(parents=True, exist_ok=True)

    def undo():
        for argv in (["umount", str(path)], ["umount", "-l", str(path)]):
            if not harness.is_mounted(path):
                return
            subprocess.run(argv, env={"PATH": harness.BASE_PATH}, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=30)
    cleanup(undo)
    opts = f"size={size},mode=0700" + (",ro" if read_only else "")
    run = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)],
                         env={"PATH": harness.BASE_PATH}, stdin=subprocess.DEVNULL,
                         capture_output=True, timeout=30)
    if run.returncode != 0 or not harness.is_mounted(path):
        raise harness.HarnessError(f"mount -t tmpfs -o {opts} {path} failed "
                                   f"({run.returncode}): {run.stderr!r}")
    return path


def daemon_pid(m: harness.Mount) -> int:
    return int(os.getxattr(m.path, "user.warmfs.pid").decode())


def unmount(case, m: harness.Mount, timeout: float = 60.0) -> None:
    """`warmfs unmount`: exit 0, the mount gone, and the daemon already exited when it returns
    (so the SSD tier's queued writes are flushed)."""
    pids = list(set(m.pids + harness.daemon_pids(m.path)))
    run = harness.run_cli(["unmount", m.path], m.env, timeout=timeout)
    case.assertEqual(run.rc, 0, f"{run.describe()}\n{m.log_tail()}")
    case.assertFalse(harness.is_mounted(m.path), f"still mounted after warmfs unmount\n"
                                                 f"{run.describe()}")
    alive = harness.wait_gone(pids, 0.5)
    case.assertEqual(alive, [], f"warmfs unmount returned while the daemon was still running "
                                f"({run.seconds:.1f}s)\n{m.log_tail()}")
    m.close()


def file_sha256(path: Path, block: int = MiB) -> tuple[str, int]:
    """sha256 and length of the file as read through the mount."""
    h = hashlib.sha256()
    n = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(block)
            if not b:
                break
            h.update(b)
            n += len(b)
    return h.hexdigest(), n


def check_files(case, m: harness.Mount, objects: dict[str, bytes], what: str = "") -> int:
    """Read every object through the mount; each must match size and sha256. Returns the bytes
    read."""
    total = 0
    for key, data in objects.items():
        with case.subTest(key=key, what=what):
            got, n = file_sha256(m.path / key)
            case.assertEqual(n, len(data), f"{what}: {key}: length\n{m.log_tail()}")
            case.assertEqual(got, harness.sha256(data), f"{what}: {key}: sha256\n{m.log_tail()}")
        total += len(data)
    return total


def check_disk_stats(case, s: dict) -> None:
    """The SSD tier's stats keys are there, with disk_cache true."""
    missing = [k for k in DISK_STATS if k not in s]
    case.assertEqual(missing, [], f"stats --json lacks SSD tier keys: {s}")
    case.assertIs(s["disk_cache"], True, f"disk_cache is not true: {s}")


def delta(a: dict, b: dict, key: str) -> int:
    return b[key] - a[key]


def gets(s: dict) -> int:
    return s["bucket_requests"]["get"]


def flip_bytes(path: Path, offsets: list[int], length: int = 64) -> int:
    """XOR 0xFF over `length` bytes at each offset (within the file). Returns how many runs were
    flipped."""
    size = path.stat().st_size
    n = 0
    with open(path, "r+b") as f:
        for off in offsets:
            if off < 0 or off + length > size:
                continue
            f.seek(off)
            b = f.read(length)
            f.seek(off)
            f.write(bytes(x ^ 0xFF for x in b))
            n += 1
        f.flush()
        os.fsync(f.fileno())
    return n


def log_lines(m: harness.Mount, *needles: str, limit: int = 10) -> str:
    """Lines of the mount's log holding any of the needles (for failure messages)."""
    try:
        lines = m.log.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {m.log})"
    hits = [ln for ln in lines if any(n in ln for n in needles)]
    return f"{m.log}: " + ("\n".join(hits[-limit:]) if hits else "(no matching lines)")


def note(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)

