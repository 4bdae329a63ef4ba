#!/usr/bin/env python3
"""What scraping /metrics costs the read path: warm reads with and without a scraper, alternated.

    python3 tools/bench/metrics_cost.py [--size MiB] [--pairs N] [--repeat N] [--interval SECONDS]

One mount of s3rver with --metrics-listen and a memory tier that holds the object. After one
unmeasured pass, each pair makes two passes of --repeat reads of the object with `dd bs=1M` from warmfs's memory
tier (the page cache dropped before each read, so every read reaches the daemon), one while a
thread scrapes /metrics every --interval seconds (default 0.05: 300 times Prometheus's usual
15 s) and one without, in alternating order. Prints each pass, then the median MB/s of each and their
ratio with the spread of the per-pair ratios. Root only (mounts). Not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import dd_read, harness  # noqa: E402

MiB = 1024 * 1024


def drop_page_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def dd_mbps(path: Path, size: int, repeat: int = 1) -> float:
    """MB/s of `repeat` reads of the file, the page cache dropped before each."""
    elapsed = 0.0
    for _ in range(repeat):
        drop_page_cache(path)
        elapsed += dd_read(path)[1]
    return repeat * size / MiB / elapsed


class Scraper:
    def __init__(self, port: int, interval: float):
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.interval = interval
        self.stop = threading.Event()
        self.count = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.wait(self.interval):
            with urllib.request.urlopen(self.url, timeout=10) as r:
                r.read()
            self.count += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=512, help="object size in MiB (default 512)")
    ap.add_argument("--pairs", type=int, default=6, help="alternated pairs (default 6)")
    ap.add_argument("--repeat", type=int, default=8, help="reads of the object per pass (default 8)")
    ap.add_argument("--interval", type=float, default=0.05, help="seconds between scrapes")
    args = ap.parse_args()
    size = args.size * MiB
    cleanups = []
    try:
        server = harness.start_server(lambda f, *a: cleanups.append((f, a)), harness.S3rver())
        client = server.client()
        harness.create_bucket(client, "bench")
        client.put_object(Bucket="bench", Key="obj.bin", Body=harness.make_data(size, seed=7))
        port = harness.free_port()
        memory = f"{max(2 * args.size, 256)}M"
        m = harness.Mount(server, "s3://bench", name="metrics-cost",
                          args=["--memory-cache-size", memory, "--read-only",
                                "--metrics-listen", f"127.0.0.1:{port}"])
        cleanups.append((m.close, ()))
        m.start()
        path = m.path / "obj.bin"
        dd_mbps(path, size)  # cold: fills the memory tier
        dd_mbps(path, size)  # warm, unmeasured
        plain, scraped, ratios = [], [], []
        for i in range(args.pairs):
            order = ("plain", "scraped") if i % 2 == 0 else ("scraped", "plain")
            got = {}
            for kind in order:
                if kind == "plain":
                    got[kind] = dd_mbps(path, size, args.repeat)
                else:
                    with Scraper(port, args.interval) as s:
                        got[kind] = dd_mbps(path, size, args.repeat)
                    got["scrapes"] = s.count
            plain.append(got["plain"])
            scraped.append(got["scraped"])
            ratios.append(got["scraped"] / got["plain"])
            print(f"pair {i + 1}: without {got['plain']:8.0f} MB/s   with {got['scrapes']:3d} "
                  f"scrapes {got['scraped']:8.0f} MB/s   ratio {ratios[-1]:.3f}", flush=True)
        stats = m.stats()
        print(f"memory hits {stats['memory_hit_bytes'] / MiB:.0f} MiB of "
              f"{stats['bytes_read'] / MiB:.0f} MiB read; bucket {stats['bucket_bytes_read'] / MiB:.0f} MiB")
        print(f"median: without {statistics.median(plain):.0f} MB/s, with scrapes every "
              f"{args.interval} s {statistics.median(scraped):.0f} MB/s; ratio "
              f"{statistics.median(ratios):.3f} (pairs {min(ratios):.3f}-{max(ratios):.3f})")
        return 0
    finally:
        for fn, a in reversed(cleanups):
            fn(*a)


if __name__ == "__main__":
    sys.exit(main())
