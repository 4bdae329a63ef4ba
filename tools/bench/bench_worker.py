#!/usr/bin/env python3
"""The reading and writing side of the benchmark workloads, one subprocess per measurement.

tools/bench/run starts each of these in its own process group with a timeout, so a workload
that hangs on a mount is killed and reported as `timeout` without stopping the others. Each
prints one JSON object on stdout. Not meant to be run by hand, but it can be:

  bench_worker.py small ROOT [--threads 8]    walk ROOT, read every file (files/s)
  bench_worker.py shuffle ROOT LIST [--threads 8] [--publish]
                                              read the files LIST names (relative to ROOT) in its
                                              order, each thread taking the next, as loader
                                              workers do; --publish first publishes LIST as the
                                              mount's order (python/warmfs) (files/s)
  bench_worker.py records ROOT LIST [--threads 8] [--publish]
                                              read the ranges LIST names ("PATH OFFSET LENGTH",
                                              PATH relative to ROOT) in its order, map-style
                                              (open, pread, close each), 8 threads taking the
                                              next; --publish publishes LIST first (records/s)
  bench_worker.py windows ROOT LIST [--threads 8] [--publish] [--drop]
                                              token windows: the ranges LIST names (one file),
                                              in its order, as a memmap'd token dataset reads
                                              them: each thread keeps the file open and preads
                                              the next window; --drop drops each window's pages
                                              from the page cache after its read (so a later
                                              epoch reaches the file system) (windows/s)
  bench_worker.py tar ROOT                    iterate every *.tar under ROOT sample by sample
  bench_worker.py rand FILE --jobs 4 --seconds S [--direct]   random 4 KiB preads (no fio)
  bench_worker.py ckpt DIR --size MiB --name NAME [--s3 ENDPOINT BUCKET KEY_PREFIX]
                                              write NAME.tmp, fsync, rename to NAME
  bench_worker.py origin-rand ENDPOINT BUCKET KEY SIZE --jobs 4 --seconds S
                                              random 4 KiB range GETs straight to the origin
"""

import argparse
import hashlib
import http.client
import json
import mmap
import os
import random
import sys
import tarfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MiB = 1 << 20


def emit(obj):
    print(json.dumps(obj), flush=True)


def read_all(path, bufsize=MiB):
    n = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(bufsize)
            if not b:
                return n
            n += len(b)


def small(args):
    start = time.monotonic()
    paths = []
    for dirpath, _dirs, files in os.walk(args.root):
        paths += [os.path.join(dirpath, f) for f in files]
    with ThreadPoolExecutor(args.threads) as pool:
        sizes = list(pool.map(read_all, paths))
    secs = time.monotonic() - start
    emit({"files": len(paths), "bytes": sum(sizes), "seconds": secs,
          "files_per_s": len(paths) / secs})


def loader_epoch(root, order, threads, publish, read_one):
    """One epoch as a loader runs it: publish order first if asked, then `threads` workers
    each take the next entry and read_one(i) it. Returns (results, seconds, publish seconds)."""
    start = time.monotonic()
    if publish:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
        import warmfs
        warmfs.publish_order(root, order)
    published = time.monotonic() - start
    nxt = iter(range(len(order)))
    lock = threading.Lock()
    results = [0] * len(order)

    def loader_worker():
        while True:
            with lock:
                i = next(nxt, None)
            if i is None:
                return
            results[i] = read_one(i)

    workers = [threading.Thread(target=loader_worker) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return results, time.monotonic() - start, published


def shuffle(args):
    names = Path(args.list).read_text().split()
    paths = [os.path.join(args.root, n) for n in names]
    sizes, secs, published = loader_epoch(args.root, names, args.threads, args.publish,
                                          lambda i: read_all(paths[i]))
    emit({"files": len(paths), "bytes": sum(sizes), "seconds": secs,
          "files_per_s": len(paths) / secs, "publish_s": published})


def read_ranges(listing):
    """The (path, offset, length) entries of a "PATH OFFSET LENGTH" listing."""
    entries = []
    for line in Path(listing).read_text().splitlines():
        path, off, length = line.rsplit(" ", 2)
        entries.append((path, int(off), int(length)))
    return entries


def records(args):
    entries = read_ranges(args.list)

    def read_record(i):
        path, off, length = entries[i]
        fd = os.open(os.path.join(args.root, path), os.O_RDONLY)
        try:
            return len(os.pread(fd, length, off))
        finally:
            os.close(fd)

    got, secs, published = loader_epoch(args.root, entries, args.threads, args.publish,
                                         read_record)
    want = sum(e[2] for e in entries)
    if sum(got) != want:
        raise SystemExit(f"read {sum(got)} bytes of records, expected {want}")
    emit({"records": len(entries), "bytes": sum(got), "seconds": secs,
          "records_per_s": len(entries) / secs, "publish_s": published})


def windows(args):
    entries = read_ranges(args.list)
    paths = {e[0] for e in entries}
    if len(paths) != 1:
        raise SystemExit(f"windows: the listing names {len(paths)} files, expected one")
    path = os.path.join(args.root, paths.pop())
    local = threading.local()  # each loader thread's descriptor, opened once

    def read_window(i):
        _, off, length = entries[i]
        fd = getattr(local, "fd", None)
        if fd is None:
            fd = local.fd = os.open(path, os.O_RDONLY)
        got = len(os.pread(fd, length, off))
        if args.drop:
            os.posix_fadvise(fd, off, length, os.POSIX_FADV_DONTNEED)
        return got

    got, secs, published = loader_epoch(args.root, entries, args.threads, args.publish,
                                         read_window)
    want = sum(e[2] for e in entries)
    if sum(got) != want:
        raise SystemExit(f"read {sum(got)} bytes of windows, expected {want}")
    emit({"windows": len(entries), "bytes": sum(got), "seconds": secs,
          "windows_per_s": len(entries) / secs, "publish_s": published})


def tar(args):
    """WebDataset-style: a sample is the run of members sharing a basename (blob + .json)."""
    start = time.monotonic()
    shards = sorted(Path(args.root).glob("*.tar"))
    samples = nbytes = 0
    for shard in shards:
        last = None
        with tarfile.open(shard, mode="r|") as tf:
            for m in tf:
                if not m.isfile():
                    continue
                data = tf.extractfile(m).read()
                nbytes += len(data)
                stem = m.name.split(".", 1)[0]
                if stem != last:
                    samples += 1
                    last = stem
                if m.name.endswith(".json"):
                    json.loads(data)
    secs = time.monotonic() - start
    emit({"shards": len(shards), "samples": samples, "bytes": nbytes, "seconds": secs,
          "samples_per_s": samples / secs})


def percentiles(lat):
    lat.sort()
    if not lat:
        return 0.0, 0.0
    return lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]


def timed_random(op, nblocks, jobs, seconds):
    """Run op(offset) from `jobs` threads for `seconds`; latencies in microseconds."""
    lats = [[] for _ in range(jobs)]
    stop = time.monotonic() + seconds

    def job(i):
        rng = random.Random(1000 + i)
        while time.monotonic() < stop:
            off = rng.randrange(nblocks) * 4096
            t = time.perf_counter()
            op(i, off)
            lats[i].append((time.perf_counter() - t) * 1e6)

    start = time.monotonic()
    threads = [threading.Thread(target=job, args=(i,)) for i in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.monotonic() - start
    lat = [x for l in lats for x in l]
    p50, p99 = percentiles(lat)
    return {"reads": len(lat), "seconds": secs, "iops": len(lat) / secs, "p50_us": p50,
            "p99_us": p99}


def rand(args):
    size = os.stat(args.file).st_size
    flags = os.O_RDONLY | (os.O_DIRECT if args.direct else 0)
    fds = [os.open(args.file, flags) for _ in range(args.jobs)]
    for fd in fds:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    bufs = [mmap.mmap(-1, 4096) for _ in range(args.jobs)]  # page-aligned, as O_DIRECT needs

    def op(i, off):
        if os.preadv(fds[i], [bufs[i]], off) != 4096:
            raise SystemExit(f"short read at {off}")

    out = timed_random(op, size // 4096, args.jobs, args.seconds)
    out["tool"] = "python pread"
    emit(out)


def origin_rand(args):
    host, port = args.endpoint.split("//", 1)[1].split(":")
    conns = [http.client.HTTPConnection(host, int(port), timeout=30) for _ in range(args.jobs)]
    target = f"/{args.bucket}/{args.key}"

    def op(i, off):
        conns[i].request("GET", target, headers={"Range": f"bytes={off}-{off + 4095}"})
        r = conns[i].getresponse()
        body = r.read()
        if r.status != 206 or len(body) != 4096:
            raise SystemExit(f"range GET at {off}: {r.status}, {len(body)} bytes")

    out = timed_random(op, args.size // 4096, args.jobs, args.seconds)
    out["tool"] = "python http.client range GETs"
    emit(out)


def s3_client(endpoint):
    import boto3
    from botocore.config import Config
    return boto3.session.Session(aws_access_key_id="S3RVER", aws_secret_access_key="S3RVER",
                                 region_name="us-east-1").client(
        "s3", endpoint_url=endpoint, config=Config(s3={"addressing_style": "path"}))


def ckpt(args):
    """Seconds until fsync returns (open, write in 8 MiB calls, fsync), then rename; with --s3,
    whether the temp object was in the bucket right after fsync returned (HEAD with its size)."""
    block = 8 * MiB
    data = os.urandom(args.size * MiB)
    digest = hashlib.sha256(data).hexdigest()
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    tmp, final = d / (args.name + ".tmp"), d / args.name
    view = memoryview(data)
    start = time.monotonic()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for off in range(0, len(data), block):
        chunk = view[off:off + block]
        while chunk:
            n = os.write(fd, chunk)
            chunk = chunk[n:]
    os.fsync(fd)
    t_fsync = time.monotonic() - start
    durable_at_fsync = None
    if args.s3:
        endpoint, bucket, prefix = args.s3
        try:
            head = s3_client(endpoint).head_object(Bucket=bucket, Key=prefix + args.name + ".tmp")
            durable_at_fsync = head["ContentLength"] == len(data)
        except Exception:
            durable_at_fsync = False
    t1 = time.monotonic()
    os.close(fd)
    os.rename(tmp, final)
    t_rename = time.monotonic() - t1
    emit({"bytes": len(data), "fsync_s": t_fsync, "close_rename_s": t_rename,
          "sha256": digest, "durable_at_fsync": durable_at_fsync})


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("small")
    p.add_argument("root")
    p.add_argument("--threads", type=int, default=8)
    p = sub.add_parser("shuffle")
    p.add_argument("root")
    p.add_argument("list")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--publish", action="store_true")
    p = sub.add_parser("records")
    p.add_argument("root")
    p.add_argument("list")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--publish", action="store_true")
    p = sub.add_parser("windows")
    p.add_argument("root")
    p.add_argument("list")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--publish", action="store_true")
    p.add_argument("--drop", action="store_true")
    p = sub.add_parser("tar")
    p.add_argument("root")
    p = sub.add_parser("rand")
    p.add_argument("file")
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--direct", action="store_true", help="O_DIRECT (every read reaches the filesystem)")
    p = sub.add_parser("origin-rand")
    p.add_argument("endpoint")
    p.add_argument("bucket")
    p.add_argument("key")
    p.add_argument("size", type=int)
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--seconds", type=float, default=10)
    p = sub.add_parser("ckpt")
    p.add_argument("dir")
    p.add_argument("--size", type=int, required=True, help="MiB")
    p.add_argument("--name", required=True)
    p.add_argument("--s3", nargs=3, metavar=("ENDPOINT", "BUCKET", "KEY_PREFIX"))
    args = ap.parse_args()
    {"small": small, "shuffle": shuffle, "records": records, "windows": windows, "tar": tar, "rand": rand, "origin-rand": origin_rand, "ckpt": ckpt}[args.cmd](args)


if __name__ == "__main__":
    try:
        main()
    except OSError as e:
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
        sys.exit(1)
