#!/usr/bin/env python3
"""Cold sequential reads of one object, systems alternated, with each process's CPU per pass.

    python3 tools/bench/cold_pairs.py [--order warmfs,s3fs,warmfs-mem,...] [--key big/obj-0.bin]
                                      [--shape plain|capped] [--streams N]

Uses the data set and origin of `tools/bench/run` (run that once first: it makes the data). For
each entry of --order: a fresh mount with an empty cache, the page cache dropped, the origin's
copy of the object read back into the page cache (so the origin serves from memory, as in the
harness), then `dd bs=1M` of the object through the mount. Prints MB/s, the CPU seconds
that s3rver (node), tools/s3proxy and the filesystem's daemon spent on the pass (read from
/proc/PID/stat before and after), and the GETs the proxy counted. On a machine where the
origin needs a whole core, the daemon's CPU per GiB is what a filesystem can still change;
alternating the systems spreads the machine's drift over all of them.

Systems: warmfs (as the harness mounts it, with the SSD tier), warmfs-mem (memory tier only:
what filling the SSD tier costs during a cold read), s3fs, rclone, warmfs@PATH (the binary at
PATH, mounted as warmfs is: two builds alternated), and origin (no file system: curl, range
GETs of --origin-parts parts per object in parallel through the proxy: the origin limit).
--shape capped puts the proxy in the benchmark's capped origin shape (bench_origin.SHAPES: each
connection held to 50 MB/s, 25 ms first byte); --streams N reads the first N big objects at
once (one dd each; MB/s is their total, CPU per GiB of all of them). Root only (mounts, cache
drops).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_origin  # noqa: E402
import bench_systems  # noqa: E402
from benchlib import dd_read, harness  # noqa: E402


class WarmfsMemoryOnly(bench_systems.Warmfs):
    name = "warmfs-mem"
    ssd_tier = False


class WarmfsBinary(bench_systems.Warmfs):
    """warmfs from another binary: every warmfs command it runs uses that binary."""

    def __init__(self, binary: str, *a, **kw):
        super().__init__(*a, **kw)
        self.binary = Path(binary)
        self.dir = self.dir.with_name("warmfs-" + self.binary.name)
        self.mnt, self.cache, self.home = self.dir / "mnt", self.dir / "cache", self.dir / "home"

    def _with_binary(self, fn):
        saved = harness.WARMFS
        harness.WARMFS = self.binary
        try:
            return fn()
        finally:
            harness.WARMFS = saved

    def mount(self) -> None:
        self._with_binary(super().mount)

    def unmount(self) -> None:
        self._with_binary(super().unmount)


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--order", default="warmfs,s3fs,warmfs-mem,s3fs,warmfs,warmfs-mem",
                    help="systems, comma-separated, in the order measured")
    ap.add_argument("--key", default="big/obj-0.bin")
    ap.add_argument("--data-dir", default="/var/tmp/warmfs-bench/full")
    ap.add_argument("--work", default="/var/tmp/warmfs-bench/cold-pairs")
    ap.add_argument("--first-byte-ms", type=float, default=15.0)
    ap.add_argument("--shape", choices=list(bench_origin.SHAPES), default="plain")
    ap.add_argument("--streams", type=int, default=1, help="objects read at once (big/obj-0..N-1)")
    ap.add_argument("--warmfs-arg", action="append", default=[], help="extra `warmfs mount` argument")
    ap.add_argument("--origin-parts", type=int, default=16, help="range GETs per object for `origin`")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("cold_pairs: needs root (mounts, page-cache drops)", file=sys.stderr)
        return 2
    data = Path(a.data_dir)
    if not (data / "manifest.json").exists():
        print(f"cold_pairs: no data set in {data}; run tools/bench/run once first", file=sys.stderr)
        return 2
    work = Path(a.work)
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    kinds = {"warmfs": bench_systems.Warmfs, "warmfs-mem": WarmfsMemoryOnly, "s3fs": bench_systems.S3fs,
             "rclone": bench_systems.Rclone}
    order = a.order.split(",")
    unknown = [n for n in order if n not in kinds and n != "origin" and not n.startswith("warmfs@")]
    if unknown:
        print(f"cold_pairs: unknown system(s) {', '.join(unknown)}; known: {', '.join(kinds)}",
              file=sys.stderr)
        return 2
    origin = bench_origin.Origin(data, logs, a.first_byte_ms, 0.0)
    systems = {}
    figures = {}
    origin.start()
    try:
        print(f"origin shape {a.shape}: {origin.set_shape(a.shape, a.first_byte_ms, 0.0)}", flush=True)
        def extra(n):
            return list(a.warmfs_arg) if n.startswith("warmfs") else []
        systems = {n: (WarmfsBinary(n.split("@", 1)[1], work, origin, logs, extra(n)) if "@" in n
                       else kinds[n](work, origin, logs, extra(n))) for n in set(order) if n != "origin"}
        keys = [a.key] if a.streams == 1 else [f"big/obj-{i}.bin" for i in range(a.streams)]
        sizes = [origin.object_path(k).stat().st_size for k in keys]
        total = sum(sizes)
        width = max(11, *(len(n) for n in order))
        print(f"{'system':{width}s} {'MB/s':>6s}  CPU s/GiB: {'node':>5s} {'proxy':>5s} {'daemon':>6s}",
              flush=True)
        for name in order:
            s = systems.get(name)
            if s:
                s.mount()
            subprocess.run("sync; echo 3 > /proc/sys/vm/drop_caches", shell=True, check=True)
            for k in keys:
                subprocess.run(["cat", str(origin.object_path(k))], stdout=subprocess.DEVNULL, check=True)
            daemon = s.pids()[0] if s and s.pids() else 0
            pids = (origin.s3rver.pid, origin.proxy.pid, daemon)
            before = [cpu_seconds(p) for p in pids]
            gets_before = origin.proxy_stats()["requests_by_method"].get("GET", 0)
            t = time.monotonic()
            if s is None:
                script = ""
                for k, size in zip(keys, sizes):
                    step = (size + a.origin_parts - 1) // a.origin_parts
                    for i in range(a.origin_parts):
                        script += (f"curl -sf -o /dev/null -r {i * step}-{min(size, (i + 1) * step) - 1} "
                                   f"'{origin.endpoint}/{bench_origin.BUCKET}/{k}' & ")
                subprocess.run(["bash", "-c", script + "wait"], check=True)
            elif len(keys) == 1:
                _, dt = dd_read(f"{s.mnt}/{keys[0]}")
            else:
                subprocess.run(["bash", "-c", " ".join(f"dd if='{s.mnt}/{k}' of=/dev/null bs=1M "
                                                        "status=none &" for k in keys) + " wait"],
                               check=True)
            if s is None or len(keys) > 1:
                dt = time.monotonic() - t
            per_gib = [(cpu_seconds(p) - b) * (1 << 30) / total for p, b in zip(pids, before)]
            gets = origin.proxy_stats()["requests_by_method"].get("GET", 0) - gets_before
            figures.setdefault(name, []).append(total / dt / 1e6)
            print(f"{name:{width}s} {total / dt / 1e6:6.0f}  CPU s/GiB: {per_gib[0]:5.2f} "
                  f"{per_gib[1]:5.2f} {per_gib[2]:6.2f}  GETs {gets}", flush=True)
            if s:
                s.unmount()
        print("median (min-max) MB/s: " + "; ".join(
            f"{n} {statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f}, n={len(v)})"
            for n, v in figures.items()), flush=True)
    finally:
        for s in systems.values():
            s.unmount()
        origin.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
