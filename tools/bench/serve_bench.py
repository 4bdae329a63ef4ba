#!/usr/bin/env python3
"""A mount reading through a cache server (`warmfs serve`), next to a mount's own SSD tier.

Starts s3rver with one object of --size MiB and a `warmfs serve` (SSD tier, 64M memory, so its
hits come from its SSD like a mount's own tier would). Warms the server through one mount
(`warmfs prefetch`), then mounts afresh (16M memory, no cache dir), drops the page cache and
times --count random 4 KiB preads (each misses the mount's memory and is served by the
server) and one sequential `dd bs=1M`. Then the same two with a local --cache-dir instead
(warmed, remounted, page cache dropped). Prints JSON lines and a markdown table, with the
bucket bytes each timed pass cost (should be 0). Not a test.

Usage: tools/bench/serve_bench.py [--size MiB] [--count N] [--server-memory SIZE]
"""

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import MiB, dd_mbps, drop_caches, harness, mount_command, mount_env, origin_with_object  # noqa: E402
from randread import stats, time_reads  # noqa: E402


def measure(env, cmd, mnt, offsets):
    """Random 4 KiB reads and one dd of object.bin through a fresh mount; bucket bytes each."""
    subprocess.run(cmd, env=env, check=True)
    try:
        drop_caches()
        s0 = stats(mnt)
        rnd = time_reads(mnt / "object.bin", offsets)
        s1 = stats(mnt)
        drop_caches()
        mbps = dd_mbps(mnt / "object.bin")
        s2 = stats(mnt)
    finally:
        subprocess.run([str(harness.WARMFS), "unmount", str(mnt)], check=True)
    rnd["bucket_bytes_read"] = s1["bucket_bytes_read"] - s0["bucket_bytes_read"]
    return rnd, {"mb_per_s": round(mbps), "bucket_bytes_read": s2["bucket_bytes_read"] - s1["bucket_bytes_read"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=512, help="object size in MiB (default 512)")
    ap.add_argument("--count", type=int, default=2000, help="random reads (default 2000)")
    ap.add_argument("--server-memory", default="64M",
                    help="the server's memory cache (default 64M: its hits come from its SSD tier)")
    args = ap.parse_args()
    size = args.size * MiB
    rng = random.Random(42)
    offsets = [rng.randrange(0, size // 4096) * 4096 for _ in range(args.count)]
    with origin_with_object(args.size) as (tmp, _local, s3):
        env = mount_env(tmp, s3)
        token = tmp / "token"
        token.write_text(os.urandom(16).hex())
        token.chmod(0o600)
        port = harness.free_port()
        url = f"http://127.0.0.1:{port}"
        log = open(tmp / "serve.log", "wb")
        serve = subprocess.Popen([str(harness.WARMFS), "serve", "--bucket", "bench", "--listen", f"127.0.0.1:{port}",
                                  "--endpoint", s3.endpoint, "--path-style", "--cache-dir", str(tmp / "server-ssd"),
                                  "--cache-size", f"{args.size + 256}M", "--memory-cache-size", args.server_memory,
                                  "--token-file", str(token)], env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            harness.wait_port(port, serve, tmp / "serve.log", 30)
            mnt = tmp / "mnt"
            mnt.mkdir()
            remote = mount_command(s3, mnt, tmp / "remote.log", "--memory-cache-size", "16M", "--read-only",
                                   "--cache-server", url, "--token-file", str(token))
            subprocess.run(remote, env=env, check=True)
            subprocess.run([str(harness.WARMFS), "prefetch", str(mnt), "object.bin"], check=True,
                           stdout=subprocess.DEVNULL)
            subprocess.run([str(harness.WARMFS), "unmount", str(mnt)], check=True)
            srv_rnd, srv_seq = measure(env, remote, mnt, offsets)
            server_stats = json.loads(subprocess.run(
                [str(harness.WARMFS), "stats", "--server", url, "--token-file", str(token), "--json"],
                capture_output=True, text=True, check=True).stdout)
        finally:
            serve.terminate()
            serve.wait(30)
        local = mount_command(s3, mnt, tmp / "local.log", "--memory-cache-size", "16M", "--read-only",
                              "--cache-dir", str(tmp / "cache"), "--cache-size", f"{args.size + 256}M")
        subprocess.run(local, env=env, check=True)
        subprocess.run([str(harness.WARMFS), "prefetch", str(mnt), "object.bin"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([str(harness.WARMFS), "unmount", str(mnt)], check=True)
        ssd_rnd, ssd_seq = measure(env, local, mnt, offsets)
    print(json.dumps({"measurement": "cache_server_random_4k", **srv_rnd}))
    print(json.dumps({"measurement": "cache_server_sequential", **srv_seq}))
    print(json.dumps({"measurement": "local_ssd_tier_random_4k", **ssd_rnd}))
    print(json.dumps({"measurement": "local_ssd_tier_sequential", **ssd_seq}))
    print(json.dumps({"measurement": "server_side", "latency_us": server_stats["latency_us"],
                      "hit_ratio": server_stats["hit_ratio"], "bucket_bytes_read": server_stats["bucket_bytes_read"]}))
    print(f"\n| {args.size} MiB object, memory 16M, page cache dropped | random 4 KiB p50 | p99 | IOPS | dd bs=1M |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| through the cache server (server memory {args.server_memory}) | {srv_rnd['p50_us']} us | {srv_rnd['p99_us']} us | "
          f"{srv_rnd['iops']} | {srv_seq['mb_per_s']} MB/s |")
    print(f"| the mount's own SSD tier (--cache-dir) | {ssd_rnd['p50_us']} us | {ssd_rnd['p99_us']} us | "
          f"{ssd_rnd['iops']} | {ssd_seq['mb_per_s']} MB/s |")


if __name__ == "__main__":
    main()
