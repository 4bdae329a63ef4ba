#!/usr/bin/env python3
"""Sequential-read throughput of one object: warmfs cold and warm, against the limits.

Starts s3rver (the faster local origin), uploads one object of --size MiB, keeps the same bytes
in a local file, and reads each with `dd bs=1M` in one run:
  local cold (page cache dropped) and warm; the raw origin (8 parallel range GETs with curl);
  warmfs cold (fresh mount, empty caches), warm from its own tiers (page cache dropped), and
  warm from the kernel page cache; with --cache-dir also from the SSD tier alone (a remount
  on the same cache dir with the page cache dropped: memory empty).
Prints one JSON line per measurement, then a table of MB/s and ratios. Not a test.

Usage: tools/bench/seqread.py [--size MiB] [--cache-dir DIR]
"""

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import MiB, dd_mbps, drop_caches, harness, mount_command, mount_env, origin_with_object  # noqa: E402


def raw_origin(endpoint, bucket, key, size):
    parts = 8
    step = (size + parts - 1) // parts
    def get(i):
        lo, hi = i * step, min(size, (i + 1) * step) - 1
        subprocess.run(["curl", "-sf", "-o", "/dev/null", "-r", f"{lo}-{hi}",
                        f"{endpoint}/{bucket}/{key}"], check=True)
    start = time.monotonic()
    with ThreadPoolExecutor(parts) as pool:
        list(pool.map(get, range(parts)))
    return size / (time.monotonic() - start) / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024, help="object size in MiB (default 1024)")
    ap.add_argument("--cache-dir", help="also measure the SSD tier, with this cache dir")
    args = ap.parse_args()
    size = args.size * MiB
    results = {}

    def record(name, mbps):
        results[name] = mbps
        print(json.dumps({"measurement": name, "MB_per_s": round(mbps, 1)}), flush=True)

    with origin_with_object(args.size) as (tmp, local, server):
        drop_caches()
        record("local_cold", dd_mbps(local))
        record("local_warm", dd_mbps(local))
        record("origin_raw", raw_origin(server.endpoint, "bench", "object.bin", size))
        mnt = tmp / "mnt"
        mnt.mkdir()
        extra = ["--memory-cache-size", f"{max(2 * args.size, 64)}M"]
        if args.cache_dir:
            extra += ["--cache-dir", args.cache_dir, "--cache-size", f"{2 * args.size + 128}M"]
        env = mount_env(tmp, server)
        cmd = mount_command(server, mnt, tmp / "warmfs.log", *extra)
        subprocess.run(cmd, env=env, check=True)
        try:
            drop_caches()
            record("warmfs_cold", dd_mbps(mnt / "object.bin"))
            drop_caches()
            record("warmfs_warm_own_tiers", dd_mbps(mnt / "object.bin"))
            record("warmfs_warm_page_cache", dd_mbps(mnt / "object.bin"))
        finally:
            subprocess.run([str(harness.WARMFS), "unmount", str(mnt)], check=True)
        if args.cache_dir:
            subprocess.run(cmd, env=env, check=True)
            try:
                drop_caches()
                record("warmfs_ssd_tier", dd_mbps(mnt / "object.bin"))
                stats = json.loads(subprocess.run([str(harness.WARMFS), "stats", str(mnt), "--json"],
                                                  capture_output=True, text=True, check=True).stdout)
                print(json.dumps({"ssd_pass_bucket_bytes_read": stats["bucket_bytes_read"],
                                  "ssd_pass_disk_hit_bytes": stats.get("disk_hit_bytes")}))
            finally:
                subprocess.run([str(harness.WARMFS), "unmount", str(mnt)], check=True)

    lc, lw, o = results["local_cold"], results["local_warm"], results["origin_raw"]
    print(f"\n| read of {args.size} MiB, dd bs=1M | MB/s | vs local cold | vs local warm | vs origin |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, v in results.items():
        print(f"| {name} | {v:.0f} | {v / lc:.2f}x | {v / lw:.2f}x | {v / o:.2f}x |")


if __name__ == "__main__":
    main()
