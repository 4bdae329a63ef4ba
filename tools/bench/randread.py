#!/usr/bin/env python3
"""Latency of random 4 KiB reads served by warmfs's SSD tier, next to a local file.

Starts s3rver, uploads one object of --size MiB (and keeps a local copy), mounts with a
--cache-dir and a small memory cache, warms the SSD tier (warmfs prefetch), remounts on the
same cache dir so memory is empty, drops the page cache, and times --count random 4 KiB
preads (one thread, offsets aligned to 4 KiB, never the same chunk twice in a row). The same
offsets are then read from the local copy with its page cache dropped. Prints p50, p99 and
IOPS for both, and the share of bytes the bucket served during the timed pass (should be 0).
Not a test.

Usage: tools/bench/randread.py [--size MiB] [--count N]
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import MiB, drop_caches, harness, mount_command, mount_env, origin_with_object  # noqa: E402


def time_reads(path, offsets):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    lat = []
    start = time.perf_counter()
    for off in offsets:
        t = time.perf_counter()
        if len(os.pread(fd, 4096, off)) != 4096:
            raise SystemExit(f"short read at {off}")
        lat.append((time.perf_counter() - t) * 1e6)
    total = time.perf_counter() - start
    os.close(fd)
    lat.sort()
    return {"p50_us": round(lat[len(lat) // 2], 1), "p99_us": round(lat[int(len(lat) * 0.99)], 1),
            "iops": round(len(offsets) / total)}


def stats(mnt):
    out = subprocess.run([str(harness.WARMFS), "stats", str(mnt), "--json"], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024, help="object size in MiB (default 1024)")
    ap.add_argument("--count", type=int, default=2000, help="random reads (default 2000)")
    args = ap.parse_args()
    size = args.size * MiB
    rng = random.Random(42)
    offsets = [rng.randrange(0, size // 4096) * 4096 for _ in range(args.count)]
    with origin_with_object(args.size) as (tmp, local, server):
        mnt = tmp / "mnt"
        mnt.mkdir()
        env = mount_env(tmp, server)
        cmd = mount_command(server, mnt, tmp / "warmfs.log", "--memory-cache-size", "16M",
                            "--cache-dir", str(tmp / "cache"), "--cache-size", f"{args.size + 256}M")
        subprocess.run(cmd, env=env, check=True)
        subprocess.run([str(harness.WARMFS), "prefetch", str(mnt), "object.bin"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([str(harness.WARMFS), "unmount", str(mnt)], check=True)
        subprocess.run(cmd, env=env, check=True)
        try:
            drop_caches()
            before = stats(mnt)
            ssd = time_reads(mnt / "object.bin", offsets)
            after = stats(mnt)
        finally:
            subprocess.run([str(harness.WARMFS), "unmount", str(mnt)], check=True)
        drop_caches()
        loc = time_reads(local, offsets)
    ssd["bucket_bytes_read"] = after["bucket_bytes_read"] - before["bucket_bytes_read"]
    ssd["disk_hit_bytes"] = after["disk_hit_bytes"] - before["disk_hit_bytes"]
    print(json.dumps({"measurement": "warmfs_ssd_tier_random_4k", **ssd}))
    print(json.dumps({"measurement": "local_file_random_4k", **loc}))
    print(f"\n| random 4 KiB reads, {args.count} of them | p50 | p99 | IOPS |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| warmfs, SSD tier (memory empty, page cache dropped) | {ssd['p50_us']} us | {ssd['p99_us']} us | {ssd['iops']} |")
    print(f"| local file (page cache dropped) | {loc['p50_us']} us | {loc['p99_us']} us | {loc['iops']} |")


if __name__ == "__main__":
    main()
