#!/usr/bin/env python3
"""A mount reading through a cache server (`warmfs serve`), next to a mount's own SSD tier.

Starts s3rver with one object of --size MiB and a `warmfs serve` (SSD tier, 64M memory, so its
hits come from its SSD like a mount's own tier would). Warms the server through one mount
(`warmfs prefetch`), then mounts afresh (--mount-memory, 16M by default; no cache dir),
drops the page cache and times --count random 4 KiB preads (each misses the mount's memory and is served by the
server) and one sequential `dd bs=1M`. Then the same two with a local --cache-dir instead
(warmed, remounted, page cache dropped). Prints JSON lines and a markdown table, with the
bucket bytes each timed pass cost (should be 0). Each sequential pass also gives the CPU
seconds per GiB of the processes it ran through (the server, the mount's daemon, dd: the
kernel's FUSE and loopback copies are charged to whoever makes them). With --perf DIR, a
system-wide `perf record -g` of each sequential pass goes to DIR/{served,local}-seq.data (read
them with `perf report -i FILE --sort comm,dso,sym`). With --link MS,MBPS the mount reaches
the server through tools/s3proxy, which delays each answer's first byte by MS and caps each
connection at MBPS megabits/s: a server on another node, where how many chunks a mount asks
for at once decides its rate. Not a test.

Usage: tools/bench/serve_bench.py [--size MiB] [--count N] [--server-memory SIZE] [--perf DIR]
                                  [--link MS,MBPS] [--mount-memory SIZE]
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_suite import children_cpu_seconds, cpu_seconds  # noqa: E402
from benchlib import MiB, dd_read, drop_caches, harness, mount_command, mount_env, origin_with_object  # noqa: E402
from randread import stats, time_reads  # noqa: E402


def measure(env, cmd, mnt, offsets, server_pid=None, perf_data=None):
    """Random 4 KiB reads and one dd of object.bin through a fresh mount; bucket bytes each,
    and the sequential pass's CPU seconds per GiB by process."""
    subprocess.run(cmd, env=env, check=True)
    try:
        drop_caches()
        s0 = stats(mnt)
        rnd = time_reads(mnt / "object.bin", offsets)
        s1 = stats(mnt)
        drop_caches()
        roles = {"mount": harness.daemon_pids(mnt), "server": [server_pid] if server_pid else []}
        cpu0 = {r: cpu_seconds(p) for r, p in roles.items()}
        dd0 = children_cpu_seconds()
        perf = None
        if perf_data:
            perf = subprocess.Popen(["perf", "record", "-q", "-F", "499", "-g", "-a", "-o", str(perf_data)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)  # perf is recording before dd starts
        nbytes, secs = dd_read(mnt / "object.bin")
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait(60)
        gib = nbytes / (1 << 30)
        cpu = {r: round((cpu_seconds(p) - cpu0[r]) / gib, 2) for r, p in roles.items() if p}
        cpu["dd"] = round((children_cpu_seconds() - dd0) / gib, 2)
        s2 = stats(mnt)
    finally:
        subprocess.run([str(harness.WARMFS), "unmount", str(mnt)], check=True)
    rnd["bucket_bytes_read"] = s1["bucket_bytes_read"] - s0["bucket_bytes_read"]
    return rnd, {"mb_per_s": round(nbytes / secs / 1e6), "cpu_s_per_gib": cpu,
                 "bucket_bytes_read": s2["bucket_bytes_read"] - s1["bucket_bytes_read"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=512, help="object size in MiB (default 512)")
    ap.add_argument("--count", type=int, default=2000, help="random reads (default 2000)")
    ap.add_argument("--server-memory", default="64M",
                    help="the server's memory cache (default 64M: its hits come from its SSD tier)")
    ap.add_argument("--mount-memory", default="16M",
                    help="the measured mounts' memory cache (default 16M: reads miss it); a quarter of it, "
                         "8M at least, is their read-ahead budget")
    ap.add_argument("--perf", type=Path, help="record each sequential pass with perf into this directory")
    ap.add_argument("--link", help="MS,MBPS: reach the server through tools/s3proxy with this first-byte "
                                   "delay and per-connection cap")
    args = ap.parse_args()
    if args.perf:
        args.perf.mkdir(parents=True, exist_ok=True)
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
        link = None
        log = open(tmp / "serve.log", "wb")
        serve = subprocess.Popen([str(harness.WARMFS), "serve", "--bucket", "bench", "--listen", f"127.0.0.1:{port}",
                                  "--endpoint", s3.endpoint, "--path-style", "--cache-dir", str(tmp / "server-ssd"),
                                  "--cache-size", f"{args.size + 256}M", "--memory-cache-size", args.server_memory,
                                  "--token-file", str(token)], env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            harness.wait_port(port, serve, tmp / "serve.log", 30)
            if args.link:
                ms, mbps = args.link.split(",")
                upstream = types.SimpleNamespace(port=port, key=s3.key, secret=s3.secret)
                link = harness.S3Proxy(upstream, ["--first-byte-delay-ms", ms, "--bandwidth-mbps", mbps]).start()
                url = link.endpoint
            mnt = tmp / "mnt"
            mnt.mkdir()
            remote = mount_command(s3, mnt, tmp / "remote.log", "--memory-cache-size", args.mount_memory, "--read-only",
                                   "--cache-server", url, "--token-file", str(token))
            subprocess.run(remote, env=env, check=True)
            subprocess.run([str(harness.WARMFS), "prefetch", str(mnt), "object.bin"], check=True,
                           stdout=subprocess.DEVNULL)
            subprocess.run([str(harness.WARMFS), "unmount", str(mnt)], check=True)
            srv_rnd, srv_seq = measure(env, remote, mnt, offsets, serve.pid,
                                       args.perf / "served-seq.data" if args.perf else None)
            server_stats = json.loads(subprocess.run(
                [str(harness.WARMFS), "stats", "--server", url, "--token-file", str(token), "--json"],
                capture_output=True, text=True, check=True).stdout)
        finally:
            if link:
                link.stop()
            serve.terminate()
            serve.wait(30)
        local = mount_command(s3, mnt, tmp / "local.log", "--memory-cache-size", args.mount_memory, "--read-only",
                              "--cache-dir", str(tmp / "cache"), "--cache-size", f"{args.size + 256}M")
        subprocess.run(local, env=env, check=True)
        subprocess.run([str(harness.WARMFS), "prefetch", str(mnt), "object.bin"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([str(harness.WARMFS), "unmount", str(mnt)], check=True)
        ssd_rnd, ssd_seq = measure(env, local, mnt, offsets,
                                   perf_data=args.perf / "local-seq.data" if args.perf else None)
    print(json.dumps({"measurement": "cache_server_random_4k", **srv_rnd}))
    print(json.dumps({"measurement": "cache_server_sequential", **srv_seq}))
    print(json.dumps({"measurement": "local_ssd_tier_random_4k", **ssd_rnd}))
    print(json.dumps({"measurement": "local_ssd_tier_sequential", **ssd_seq}))
    print(json.dumps({"measurement": "server_side", "latency_us": server_stats["latency_us"],
                      "hit_ratio": server_stats["hit_ratio"], "bucket_bytes_read": server_stats["bucket_bytes_read"]}))
    print(f"\n| {args.size} MiB object, memory {args.mount_memory}, page cache dropped | random 4 KiB p50 | p99 | IOPS | dd bs=1M |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(f"| through the cache server (server memory {args.server_memory}) | {srv_rnd['p50_us']} us | {srv_rnd['p99_us']} us | "
          f"{srv_rnd['iops']} | {srv_seq['mb_per_s']} MB/s |")
    print(f"| the mount's own SSD tier (--cache-dir) | {ssd_rnd['p50_us']} us | {ssd_rnd['p99_us']} us | "
          f"{ssd_rnd['iops']} | {ssd_seq['mb_per_s']} MB/s |")


if __name__ == "__main__":
    main()
