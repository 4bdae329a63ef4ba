"""tools/bench/run: issue 6's benchmark. Workloads x systems x phases, one JSON line each.

Systems: `local` (the local copy: the local limit), `origin` (range GETs with curl through the
same proxy: the origin limit), `ceiling` (tools/fuse-ceiling: what FUSE allows), and the mounts
`warmfs`, `served` (warmfs with no cache dir, reading through a warmed `warmfs serve`: the shared
tier), `s3fs`, `rclone`. Phases: `cold` (fresh mount, empty caches, page cache dropped),
`warm` (a second pass in the same mount) and `warm-dropped` (a second pass after dropping the
page cache: the system's own tiers). The origin's own files are read back into the page cache
after every drop, so the origin behaves like an object store (first-byte latency, no disk).

Each measurement runs in a child process group with a timeout and ends `ok`, `error` or
`timeout`; a timeout skips the rest of that system's phases of that workload (its mount is
torn down), never the other workloads. Results are merged into the results file (a rerun of
one workload replaces just its lines), then docs/benchmarks.md and the chart are rebuilt.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import random
import re
import resource
import shutil
import signal
import subprocess
import tarfile
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import MiB, dd_argv, drop_caches, harness, parse_dd  # noqa: E402
import bench_origin  # noqa: E402
import bench_report  # noqa: E402
from bench_origin import BUCKET, FULL, SHAPES, SMOKE, Origin, log  # noqa: E402
from bench_systems import MOUNTED, Ceiling  # noqa: E402
import plan_runs  # noqa: E402  (tools/lib, on the path through benchlib)

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "bench_worker.py"
WORKLOADS = ["seq", "par4", "rand", "small", "shuffle", "shuffle-order", "ls", "tar", "records",
             "records-order", "windows", "windows-order", "epochs", "ckpt", "find", "fanout"]
SYSTEMS = ["local", "origin", "ceiling", "warmfs", "served", "s3fs", "rclone"]
# What the `served` system (a mount reading through a warmed `warmfs serve`) is measured on:
# reads; listings and writes do not go through a cache server.
SERVED_WORKLOADS = {"seq", "par4", "rand", "small", "tar"}

# Which phases each workload has, per kind of system. The ceiling applies to the reads of
# big files only (it serves files from memory, no tree).
PHASES = {
    "seq": ["cold", "warm", "warm-dropped"],
    "par4": ["cold", "warm", "warm-dropped"],
    "rand": ["cold", "warm", "warm-dropped"],
    "small": ["cold", "warm", "warm-dropped"],
    # A loader's shuffled epoch of the small files, without and with its order published.
    "shuffle": ["cold"],
    "shuffle-order": ["cold"],
    # Map-style access to the tar shards: the 100 KiB records, shuffled, without and with the
    # order (as ranges) published.
    "records": ["cold"],
    "records-order": ["cold"],
    # A memmap'd token dataset: shuffled fixed-size windows of the token file, without and with
    # the order (as ranges) published.
    "windows": ["cold"],
    "windows-order": ["cold"],
    # Three shuffled epochs over a dataset twice warmfs's SSD tier, against `warmfs plan`.
    "epochs": ["cold"],
    "ls": ["cold", "warm"],
    "tar": ["cold", "warm", "warm-dropped"],
    "ckpt": ["cold"],
    # Three mounts reading through one warmed cache server at once (`served` only).
    "fanout": ["cold"],
    # Mount and `find | wc -l` of the tree: a fresh mount, and (warmfs) a second mount on the
    # first one's cache dir (its listing index) and a mount from a snapshot.
    "find": ["cold", "index", "snapshot"],
}
CEILING_WORKLOADS = {"seq", "par4", "rand"}
# Timeouts in seconds per measurement (full size; --smoke scales them down).
TIMEOUT = {"seq": 180, "par4": 300, "rand": 120, "small": 300, "shuffle": 300,
           "shuffle-order": 300, "ls": 240, "tar": 300, "records": 300, "records-order": 300,
           "windows": 300, "windows-order": 300, "epochs": 600, "ckpt": 300, "find": 900,
           "fanout": 300}
# Range GETs in parallel per object for the origin limit of the big-file reads, per shape: with
# a per-connection cap the limit is what many connections together get.
ORIGIN_PARTS = {"plain": {"seq": 8, "par4": 4}, "capped": {"seq": 16, "par4": 8}}

# The shuffled epoch: one fixed permutation of the small files, the same for every system.
SHUFFLE_SEED = 19
# A token window: 8,192 tokens and the next one (the target), 4-byte token ids. Window i is the
# bytes [i*W, i*W + W) of the token file, so windows straddle warmfs's 1 MiB chunks now and then.
WINDOW_BYTES = 8193 * 4
# The `epochs` workload: the token file (512 MiB) read in 1 MiB windows, one chunk each (the
# plan's model: every chunk read once per epoch, in a fresh shuffle), three epochs, through a
# mount whose SSD tier is half the dataset and whose memory tier is small.
EPOCHS = 3
EPOCHS_WINDOW = MiB
EPOCHS_MOUNT = {"memory_cache_mib": 64, "cache_size": "256M"}


class Timeout(Exception):
    pass


class Skip(Exception):
    """Not applicable to this system and phase (no line is written)."""


def run_cmd(argv, timeout, cwd=None, env=None) -> subprocess.CompletedProcess:
    """Run in a new process group; on timeout kill that group (ours) and raise Timeout."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, cwd=cwd, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            proc.communicate(timeout=30)
        raise Timeout(f"{argv[0]} still running after {timeout:.0f}s")
    if proc.returncode != 0:
        tail = (err or out).strip().splitlines()[-3:]
        raise RuntimeError(f"{' '.join(map(str, argv[:3]))} exited {proc.returncode}: {' | '.join(tail)}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


# The Python workers run with glibc's heap trimming held off. Otherwise a reader that allocates
# and frees a sample's bytes per member (tarfile does) may give the heap's top back to the kernel
# and take it again on every sample (one brk pair each, and fresh pages to fault in): whether it
# does depends on the process's earlier allocations, not on the file system, and it made the
# local copy's tar row about 2.5x slower than the same reads through a mount.
WORKER_ENV = {**os.environ, "GLIBC_TUNABLES": "glibc.malloc.trim_threshold=268435456"}


def worker(args, timeout) -> dict:
    """bench_worker.py in its own process group; its {"error": ...} line becomes the error."""
    try:
        out = run_cmd([sys.executable, str(WORKER), *map(str, args)], timeout, env=WORKER_ENV).stdout
    except RuntimeError as e:
        m = re.search(r'\{"error": .*\}', str(e))
        if m:
            raise RuntimeError(json.loads(m.group(0))["error"]) from None
        raise
    return json.loads(out.strip().splitlines()[-1])


def held_kib(pid, memfds=None) -> int:
    """The memory a process holds, in KiB: its resident set, with the shared-memory pages it
    maps (RssShmem) replaced by the whole of its memory files (memfd), mapped or not. warmfs
    keeps downloaded chunks in one (common/buffer.h); the plain resident set would miss the
    pages it does not map. memfds: a dict pid -> (memfd paths found, time of the last look), so
    a sampler looks through the process's descriptors only until it has found one, and then
    at most every 2 s, not at each sample."""
    fields = {}
    for line in open(f"/proc/{pid}/status"):
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "RssShmem"):
            fields[name] = int(rest.split()[0])
    known, scanned_at = (memfds or {}).get(pid, ([], None))
    if not known and (scanned_at is None or time.monotonic() - scanned_at >= 2):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                if os.readlink(fd).startswith("/memfd:"):
                    known.append(fd)
        if memfds is not None:
            memfds[pid] = (known, time.monotonic())
    memfd_kib = 0
    for fd in known:
        with contextlib.suppress(OSError):
            memfd_kib += os.stat(fd).st_blocks // 2
    return fields.get("VmRSS", 0) - fields.get("RssShmem", 0) + memfd_kib


def cpu_seconds(pids) -> float:
    """User + system CPU time, in seconds, of the given processes (all their threads)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / tick


def children_cpu_seconds() -> float:
    """User + system CPU time of this process's finished children (the workers, curl)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent not idle (nor waiting for I/O) since boot, /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


class RssSampler:
    """Max memory held (held_kib, summed over the given pids) sampled every 100 ms on a thread."""

    def __init__(self, pids):
        self.pids = list(pids)
        self.max_kib = 0
        self._memfds = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        total = 0
        for pid in self.pids:
            with contextlib.suppress(OSError, ValueError):
                total += held_kib(pid, self._memfds)
        self.max_kib = max(self.max_kib, total)

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(0.1)

    def __enter__(self):
        if self.pids:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self.pids:
            self._thread.join()
            self._sample()


class Bench:
    def __init__(self, args):
        self.args = args
        self.spec = SMOKE if args.smoke else FULL
        self.data = Path(args.data_dir or f"/var/tmp/warmfs-bench/{self.spec.name}")
        self.local = self.data / "local"
        self.work = self.data / "work"
        self.scale = 0.25 if args.smoke else 1.0
        self.run_id = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.logs = self.data / "logs" / self.run_id  # every daemon's log, per run
        self.results = Path(args.results)
        self.records: list[dict] = []
        self.fio = shutil.which("fio")
        self.origin: Origin | None = None
        self.manifest: dict = {}
        self.ceiling: Ceiling | None = None
        self.binary_mtimes: dict[str, str] = {}
        self.phase = "cold"
        self.shape = "plain"

    def label(self, phase: str) -> str:
        """The phase as recorded: `cold` on a shape other than plain is `cold-<shape>`."""
        return phase if self.shape == "plain" else f"{phase}-{self.shape}"

    def set_shape(self, shape: str) -> None:
        """Switches the proxy to an origin shape (SHAPES) through its control API."""
        now = self.origin.set_shape(shape, self.args.first_byte_ms, self.args.bandwidth_mbps)
        self.shape = shape
        log(f"origin shape {shape}: {now}")

    # ---- plumbing ------------------------------------------------------------------------------

    def emit(self, rec: dict) -> None:
        rec = {"run": self.run_id, **rec}
        self.records.append(rec)
        print(json.dumps(rec), flush=True)

    def timeout(self, workload) -> float:
        t = TIMEOUT[workload] * self.scale
        if workload == "rand":
            t = self.args.rand_seconds + 60 * self.scale
        return max(t, 30)

    def drop(self, workload) -> None:
        """Drop the page cache, then read back the origin's copies of what the workload reads."""
        drop_caches()
        for key in self.keys_of(workload):
            p = self.origin.object_path(key)
            with contextlib.suppress(OSError), open(p, "rb", buffering=0) as f:
                while f.read(8 * MiB):
                    pass

    def keys_of(self, workload) -> list[str]:
        s = self.spec
        return {"seq": s.big_keys()[:1], "par4": s.big_keys(), "rand": [s.token_key],
                "small": s.small_keys(), "shuffle": s.small_keys(), "shuffle-order": s.small_keys(),
                "tar": s.shard_keys(), "records": s.shard_keys(),
                "records-order": s.shard_keys(), "windows": [s.token_key],
                "windows-order": [s.token_key], "epochs": [s.token_key]}.get(workload, [])

    def shuffled_small(self) -> tuple[list[str], Path]:
        """The shuffled epoch's keys, and a file listing them one per line."""
        keys = list(self.spec.small_keys())
        random.Random(SHUFFLE_SEED).shuffle(keys)
        path = self.work / "shuffle-order.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(k + "\n" for k in keys))
        return keys, path

    def shuffled_records(self) -> tuple[list[tuple], Path]:
        """The shards' .bin records (key, offset, length), from the local copy's tar headers,
        in one shuffled order; and a file listing them ("KEY OFFSET LENGTH" lines)."""
        recs = []
        for key in self.spec.shard_keys():
            with tarfile.open(self.local / key) as tf:
                recs += [(key, m.offset_data, m.size) for m in tf if m.name.endswith(".bin")]
        random.Random(SHUFFLE_SEED).shuffle(recs)
        path = self.work / "records-order.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k} {o} {n}\n" for k, o, n in recs))
        return recs, path

    def shuffled_windows(self, window, seed, name) -> tuple[list[tuple], Path]:
        """The token file's whole windows of `window` bytes (key, i*window, window), in one
        shuffled order; and a file listing them ("KEY OFFSET LENGTH" lines)."""
        size = self.spec.token_mib * MiB
        wins = [(self.spec.token_key, i * window, window) for i in range(size // window)]
        random.Random(seed).shuffle(wins)
        path = self.work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k} {o} {n}\n" for k, o, n in wins))
        return wins, path

    def windows_epoch(self, root, timeout, publish) -> dict:
        wins, listing = self.shuffled_windows(WINDOW_BYTES, SHUFFLE_SEED, "windows-order.txt")
        r = worker(["windows", root, listing, "--threads", 8, *(["--publish"] if publish else [])],
                   timeout)
        return {"value": r["windows_per_s"], "unit": "windows/s", "windows": r["windows"],
                "window_bytes": WINDOW_BYTES, "mb_per_s": round(r["bytes"] / r["seconds"] / 1e6, 1),
                "seconds": r["seconds"], "publish_s": round(r["publish_s"], 4),
                "tool": "8 threads, the token file open in each, pread of the next window of one "
                        "shuffled order"}

    def records_epoch(self, root, timeout, publish) -> dict:
        recs, listing = self.shuffled_records()
        r = worker(["records", root, listing, "--threads", 8, *(["--publish"] if publish else [])],
                   timeout)
        return {"value": r["records_per_s"], "unit": "records/s", "records": r["records"],
                "seconds": r["seconds"], "publish_s": round(r["publish_s"], 4),
                "tool": "8 threads taking the next record (open, pread, close) of one shuffled order"}

    def shuffle_epoch(self, root, timeout, publish) -> dict:
        keys, listing = self.shuffled_small()
        r = worker(["shuffle", root, listing, "--threads", 8, *(["--publish"] if publish else [])],
                   timeout)
        want = len(keys) * self.spec.small_kib * 1024
        if r["files"] != len(keys) or r["bytes"] != want:
            raise RuntimeError(f"read {r['files']} files, {r['bytes']} bytes; expected {len(keys)}, {want}")
        return {"value": r["files_per_s"], "unit": "files/s", "files": r["files"],
                "seconds": r["seconds"], "publish_s": round(r["publish_s"], 4),
                "tool": "8 threads taking the next file of one shuffled order"}

    def measure(self, workload, phase, system, fn, pids=(), stats=None) -> str:
        """Run fn() -> metrics dict, record one line; returns the status."""
        rec = {"type": "measurement", "workload": workload, "phase": self.label(phase), "system": system}
        before = stats() if stats else None
        proxy_before = self.origin.proxy_stats()
        # Where the CPU goes: the system's own processes, the proxy, the origin (s3rver).
        roles = {"system": list(pids), "proxy": [self.origin.proxy.pid], "s3rver": [self.origin.s3rver.pid]}
        cpu_before = {r: cpu_seconds(p) for r, p in roles.items()}
        # The loader (or curl) processes this harness starts, and the whole machine's busy CPU:
        # the machine is shared, and a figure taken while others' builds run says so.
        loader_before = children_cpu_seconds()
        busy_before = machine_busy_seconds()
        t0 = time.monotonic()
        with RssSampler(pids) as rss:
            try:
                rec.update(fn())
                rec["status"] = "ok"
            except Skip:
                return "skip"
            except Timeout as e:
                rec.update(status="timeout", error=str(e))
            except Exception as e:  # one workload's failure is a line, not an abort
                msg = str(e).strip().splitlines()
                rec.update(status="error", error=(msg[-1] if msg else type(e).__name__)[:300])
        rec["wall_s"] = round(time.monotonic() - t0, 3)
        rec["cpu_s"] = {r: round(cpu_seconds(p) - cpu_before[r], 2) for r, p in roles.items() if p}
        rec["cpu_s"]["loader"] = round(children_cpu_seconds() - loader_before, 2)
        rec["machine_busy_cores"] = round((machine_busy_seconds() - busy_before) / max(rec["wall_s"], 1e-3), 2)
        if pids:
            rec["rss_max_mib"] = round(rss.max_kib / 1024, 1)
        with contextlib.suppress(Exception):
            proxy_after = self.origin.proxy_stats()
            rec["proxy_requests"] = {m: n - proxy_before["requests_by_method"].get(m, 0)
                                     for m, n in proxy_after["requests_by_method"].items()
                                     if n - proxy_before["requests_by_method"].get(m, 0)}
        if stats and before:
            with contextlib.suppress(Exception):
                after = stats()
                rec["warmfs_requests"] = {k: after["bucket_requests"][k] - before["bucket_requests"].get(k, 0)
                                          for k in after["bucket_requests"]}
                for k in ("bucket_bytes_read", "memory_hit_bytes", "disk_hit_bytes", "disk_write_bytes",
                          "evicted_bytes"):
                    if k in after:
                        rec["warmfs_" + k] = after[k] - before.get(k, 0)
                if after.get("order", {}).get("orders"):  # an order was published: how it went
                    rec["warmfs_order"] = {k: after["order"][k] for k in
                                           ("fetched_entries", "read_entries", "late_reads",
                                            "wasted_entries", "lead")}
        self.emit(rec)
        return rec["status"]

    # ---- the workloads, per kind of system -----------------------------------------------------

    def dd_one(self, path, timeout) -> dict:
        nbytes, secs = parse_dd(run_cmd(dd_argv(path), timeout).stderr)
        if nbytes != self.spec.big_mib * MiB:
            raise RuntimeError(f"read {nbytes} bytes of {path}, expected {self.spec.big_mib} MiB")
        return {"value": nbytes / secs / 1e6, "unit": "MB/s", "bytes": nbytes, "seconds": secs}

    def dd_many(self, paths, timeout) -> dict:
        script = " ".join(f"dd if='{p}' of=/dev/null bs=1M status=none &" for p in paths) + " wait"
        t = time.monotonic()
        run_cmd(["bash", "-c", script], timeout)
        secs = time.monotonic() - t
        nbytes = len(paths) * self.spec.big_mib * MiB
        return {"value": nbytes / secs / 1e6, "unit": "MB/s", "bytes": nbytes, "seconds": secs}

    def rand_file(self, path, timeout) -> dict:
        """fio randread. Cold and page-cache-dropped passes use O_DIRECT, so every read reaches the
        filesystem (else the page cache absorbs the re-reads of a 512 MiB file within a second
        and the pass measures the page cache); the warm pass is buffered (page-cache hits)."""
        secs = self.args.rand_seconds
        direct = self.phase != "warm"
        if self.fio:
            out = run_cmd(["fio", "--name=rand4k", f"--filename={path}", "--rw=randread", "--bs=4k",
                           f"--direct={int(direct)}",
                           "--numjobs=4", "--ioengine=psync", "--time_based", f"--runtime={secs}",
                           "--group_reporting", "--invalidate=0", "--readonly",
                           f"--size={os.stat(path).st_size}", "--output-format=json"], timeout).stdout
            job = json.loads(out[out.index("{"):])["jobs"][0]["read"]
            pct = job["clat_ns"]["percentile"]
            return {"value": job["iops"], "unit": "IOPS", "p50_us": pct["50.000000"] / 1e3,
                    "p99_us": pct["99.000000"] / 1e3, "reads": job["total_ios"], "direct": direct,
                    "tool": "fio psync x4"}
        r = worker(["rand", path, "--jobs", 4, "--seconds", secs, *(["--direct"] if direct else [])],
                   timeout)
        return {"value": r["iops"], "unit": "IOPS", "p50_us": r["p50_us"], "p99_us": r["p99_us"],
                "reads": r["reads"], "direct": direct, "tool": r["tool"]}

    def small_tree(self, root, timeout) -> dict:
        r = worker(["small", Path(root) / "small", "--threads", 8], timeout)
        want = len(self.spec.small_keys())
        if r["files"] != want:
            raise RuntimeError(f"read {r['files']} files, expected {want}")
        return {"value": r["files_per_s"], "unit": "files/s", "files": r["files"], "seconds": r["seconds"]}

    def ls_tree(self, root, timeout) -> dict:
        t = time.monotonic()
        out = run_cmd(["ls", "-lR", str(Path(root) / "small")], timeout).stdout
        secs = time.monotonic() - t
        files = sum(1 for line in out.splitlines() if line.startswith("-"))
        if files != len(self.spec.small_keys()):
            raise RuntimeError(f"ls -lR showed {files} files, expected {len(self.spec.small_keys())}")
        return {"value": secs, "unit": "s", "files": files}

    def tar_shards(self, root, timeout) -> dict:
        r = worker(["tar", Path(root) / "shards"], timeout)
        if r["samples"] != self.manifest["samples"]:
            raise RuntimeError(f"{r['samples']} samples, expected {self.manifest['samples']}")
        return {"value": r["samples_per_s"], "unit": "samples/s", "samples": r["samples"],
                "seconds": r["seconds"]}

    def checkpoint(self, directory, timeout, system) -> dict:
        name = f"{system}-{self.run_id}.bin"
        s3 = [] if system == "local" else ["--s3", self.origin.endpoint, BUCKET, "ckpt/"]
        t_start = time.monotonic()
        r = worker(["ckpt", directory, "--size", self.spec.ckpt_mib, "--name", name, *s3], timeout)
        out = {"value": r["fsync_s"], "unit": "s", "close_rename_s": r["close_rename_s"],
               "durable_at_fsync": r["durable_at_fsync"]}
        if system != "local":
            out.update(self.check_durable("ckpt/" + name, r["sha256"], r["bytes"],
                                          t_start + timeout - time.monotonic()))
        return out

    def check_durable(self, key, sha256, nbytes, budget) -> dict:
        """boto3, straight to s3rver: is the final object there, with these bytes?"""
        import hashlib
        client = self.origin.client(direct=True)
        t0 = time.monotonic()
        first = True
        while True:
            try:
                head = client.head_object(Bucket=BUCKET, Key=key)
                if head["ContentLength"] == nbytes:
                    break
            except Exception:
                pass
            first = False
            if time.monotonic() - t0 > max(budget, 5):
                return {"durable_at_rename": False, "verified": False,
                        "visible_after_s": None}
            time.sleep(0.2)
        visible = time.monotonic() - t0
        h = hashlib.sha256()
        for chunk in client.get_object(Bucket=BUCKET, Key=key)["Body"].iter_chunks(8 * MiB):
            h.update(chunk)
        if h.hexdigest() != sha256:
            raise RuntimeError(f"{key} in the bucket does not hold the bytes written")
        return {"durable_at_rename": first, "verified": True, "visible_after_s": round(visible, 3)}

    def warm_up_origin(self) -> None:
        """Serve the first big object through the proxy twice, unmeasured, before any system.

        A fresh s3rver (node) and proxy serve their first GiB or two slower than later ones, so
        without this the system measured first would be penalised and the order of the systems
        would decide part of the cold figures (docs/benchmark-misses.md)."""
        t = time.monotonic()
        for _ in range(2):
            self.curl_ranges(self.spec.big_keys()[:1], 4, self.timeout("seq"))
        log(f"origin warmed up in {time.monotonic() - t:.1f}s")

    # origin limit: curl through the proxy, no filesystem
    def curl_ranges(self, keys, parts_per_key, timeout) -> dict:
        size = self.spec.big_mib * MiB
        step = (size + parts_per_key - 1) // parts_per_key
        script = ""
        for key in keys:
            for i in range(parts_per_key):
                lo, hi = i * step, min(size, (i + 1) * step) - 1
                script += f"curl -sf -o /dev/null -r {lo}-{hi} '{self.origin.endpoint}/{BUCKET}/{key}' & "
        t = time.monotonic()
        run_cmd(["bash", "-c", script + "wait"], timeout)
        secs = time.monotonic() - t
        return {"value": len(keys) * size / secs / 1e6, "unit": "MB/s", "seconds": secs,
                "tool": f"curl, {parts_per_key} range GETs per object in parallel"}

    def curl_many(self, keys, parallel, timeout) -> float:
        cfg = self.work / "curl-urls.txt"
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text("".join(f'url = "{self.origin.endpoint}/{BUCKET}/{k}"\noutput = "/dev/null"\n'
                               for k in keys))
        t = time.monotonic()
        run_cmd(["curl", "-sf", "-Z", "--parallel-max", str(parallel), "-K", str(cfg)], timeout)
        return time.monotonic() - t

    def curl_range_list(self, ranges, parallel, timeout) -> float:
        """Seconds for a range GET of each (key, offset, length), in order, `parallel` in flight
        (curl -Z keeps its connections alive)."""
        cfg = self.work / "curl-ranges.txt"
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text("".join(f'url = "{self.origin.endpoint}/{BUCKET}/{k}"\n'
                               f'range = "{o}-{o + n - 1}"\noutput = "/dev/null"\n'
                               for k, o, n in ranges))
        t = time.monotonic()
        run_cmd(["curl", "-sf", "-Z", "--parallel-max", str(parallel), "-K", str(cfg)], timeout)
        return time.monotonic() - t

    def origin_list(self, prefix, timeout) -> tuple[float, int, int]:
        """A tree walk by LIST with delimiter, as a filesystem lists: (seconds, keys, requests)."""
        client = self.origin.client()
        t = time.monotonic()
        todo, keys, requests = [prefix], 0, 0
        while todo:
            p = todo.pop()
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=p,
                                                                         Delimiter="/"):
                requests += 1
                keys += sum(1 for o in page.get("Contents", []) if not o["Key"].endswith("/"))
                todo += [c["Prefix"] for c in page.get("CommonPrefixes", [])]
            if time.monotonic() - t > timeout:
                raise Timeout("listing")
        return time.monotonic() - t, keys, requests

    def origin_workload(self, workload, timeout) -> dict:
        s = self.spec
        if workload == "seq":
            return self.curl_ranges(s.big_keys()[:1], ORIGIN_PARTS[self.shape]["seq"], timeout)
        if workload == "par4":
            return self.curl_ranges(s.big_keys(), ORIGIN_PARTS[self.shape]["par4"], timeout)
        if workload == "rand":
            r = worker(["origin-rand", self.origin.endpoint, BUCKET, s.token_key, s.token_mib * MiB,
                        "--jobs", 4, "--seconds", self.args.rand_seconds], timeout)
            return {"value": r["iops"], "unit": "IOPS", "p50_us": r["p50_us"], "p99_us": r["p99_us"],
                    "reads": r["reads"], "tool": r["tool"]}
        if workload == "small":
            # At the readers' parallelism (8) the origin looks slower than it is: one GET per
            # file is latency bound. The limit is taken with as many GETs in flight as
            # warmfs's fetch threads (64); the figure at 8 is kept beside it.
            lsecs, n, _ = self.origin_list("small/", timeout)
            at8 = lsecs + self.curl_many(s.small_keys(), 8, timeout)
            secs = lsecs + self.curl_many(s.small_keys(), 64, timeout)
            return {"value": n / secs, "unit": "files/s", "files": n, "seconds": secs,
                    "files_per_s_at_8": n / at8,
                    "tool": "LIST, then curl -Z --parallel-max 64 (at 8: files_per_s_at_8)"}
        if workload == "shuffle":
            # The same GETs in the same order, as many in flight as warmfs's fetch threads.
            keys, _ = self.shuffled_small()
            at8 = self.curl_many(keys, 8, timeout)
            secs = self.curl_many(keys, 64, timeout)
            return {"value": len(keys) / secs, "unit": "files/s", "files": len(keys),
                    "seconds": secs, "files_per_s_at_8": len(keys) / at8,
                    "tool": "curl -Z --parallel-max 64 in the shuffled order (at 8: files_per_s_at_8)"}
        if workload == "records":
            # The same records by range GETs, in the same order, 64 in flight.
            recs, _ = self.shuffled_records()
            secs = self.curl_range_list(recs, 64, timeout)
            return {"value": len(recs) / secs, "unit": "records/s", "records": len(recs),
                    "seconds": secs, "tool": "curl -Z --parallel-max 64, a range GET per record"}
        if workload == "windows":
            # The same windows by range GETs, in the same order, 64 in flight.
            wins, _ = self.shuffled_windows(WINDOW_BYTES, SHUFFLE_SEED, "windows-order.txt")
            secs = self.curl_range_list(wins, 64, timeout)
            return {"value": len(wins) / secs, "unit": "windows/s", "windows": len(wins),
                    "window_bytes": WINDOW_BYTES,
                    "mb_per_s": round(len(wins) * WINDOW_BYTES / secs / 1e6, 1), "seconds": secs,
                    "tool": "curl -Z --parallel-max 64, a range GET per window"}
        if workload == "ls":
            secs, n, req = self.origin_list("small/", timeout)
            return {"value": secs, "unit": "s", "files": n, "list_requests": req,
                    "tool": "ListObjectsV2 with delimiter, per directory (boto3)"}
        if workload == "tar":
            secs = self.curl_many(s.shard_keys(), 8, timeout)
            return {"value": self.manifest["samples"] / secs, "unit": "samples/s", "seconds": secs,
                    "tool": "curl -Z --parallel-max 8 of the shards (bytes only)"}
        if workload == "ckpt":
            return self.aws_cp(timeout)
        raise Skip()

    def aws_cp(self, timeout) -> dict:
        aws = shutil.which("aws")
        if aws is None:
            raise RuntimeError("aws CLI not found")
        src = self.work / "ckpt-source.bin"
        if not src.exists() or src.stat().st_size != self.spec.ckpt_mib * MiB:
            with open(src, "wb") as f:
                for _ in range(self.spec.ckpt_mib):
                    f.write(os.urandom(MiB))
        with open(src, "rb") as f:  # in the page cache, as the checkpoint is in a trainer's memory
            while f.read(8 * MiB):
                pass
        env = {**os.environ, "AWS_ACCESS_KEY_ID": harness.S3RVER_KEY,
               "AWS_SECRET_ACCESS_KEY": harness.S3RVER_SECRET, "AWS_DEFAULT_REGION": "us-east-1",
               "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
        key = f"ckpt/aws-{self.run_id}.bin"
        t = time.monotonic()
        run_cmd([aws, "s3", "cp", "--only-show-errors", str(src), f"s3://{BUCKET}/{key}",
                 "--endpoint-url", self.origin.endpoint], timeout, env=env)
        secs = time.monotonic() - t
        head = self.origin.client(direct=True).head_object(Bucket=BUCKET, Key=key)
        if head["ContentLength"] != src.stat().st_size:
            raise RuntimeError("aws s3 cp: object size differs")
        return {"value": secs, "unit": "s", "tool": "aws s3 cp (defaults: 8 MiB parts, 10 threads)"}

    def file_workload(self, workload, root, timeout, system) -> dict:
        """A workload over files under root (the local copy or a mount), by the bucket's keys."""
        s = self.spec
        root = Path(root)
        if workload == "seq":
            return self.dd_one(root / s.big_keys()[0], timeout)
        if workload == "par4":
            return self.dd_many([root / k for k in s.big_keys()], timeout)
        if workload == "rand":
            return self.rand_file(root / s.token_key, timeout)
        if workload == "small":
            return self.small_tree(root, timeout)
        if workload == "shuffle":
            return self.shuffle_epoch(root, timeout, publish=False)
        if workload == "shuffle-order":
            if system != "warmfs":
                raise Skip()  # only warmfs takes an order
            return self.shuffle_epoch(root, timeout, publish=True)
        if workload == "records":
            return self.records_epoch(root, timeout, publish=False)
        if workload == "records-order":
            if system != "warmfs":
                raise Skip()  # only warmfs takes an order
            return self.records_epoch(root, timeout, publish=True)
        if workload == "windows":
            return self.windows_epoch(root, timeout, publish=False)
        if workload == "windows-order":
            if system != "warmfs":
                raise Skip()  # only warmfs takes an order
            return self.windows_epoch(root, timeout, publish=True)
        if workload == "ls":
            return self.ls_tree(root, timeout)
        if workload == "tar":
            return self.tar_shards(root, timeout)
        if workload == "ckpt":
            return self.checkpoint(root / "ckpt", timeout, system)
        raise Skip()

    def ceiling_workload(self, workload, timeout) -> dict:
        root = self.ceiling.root
        if workload == "seq":
            return self.dd_one(root / "f0", timeout)
        if workload == "par4":
            return self.dd_many([root / f"f{i}" for i in range(self.spec.big_count)], timeout)
        if workload == "rand":
            return self.rand_file(root / "f0", timeout)
        raise Skip()

    # ---- the run -------------------------------------------------------------------------------

    def pre_warm(self, workload, root, timeout) -> None:
        """Before the warm passes of rand: the token file read once through, untimed."""
        if workload == "rand":
            run_cmd(["dd", f"if={Path(root) / self.spec.token_key}", "of=/dev/null", "bs=1M",
                     "status=none"], timeout)

    def run_phases(self, workload, system, fn, phases, pids=lambda: (), stats=None, prewarm=None):
        timeout = self.timeout(workload)
        if self.shape != "plain":
            phases = [p for p in phases if p == "cold"]
        for i, phase in enumerate(phases):
            if phase in ("cold", "warm-dropped"):
                self.drop(workload)
            if phase == "warm" and prewarm:
                try:
                    prewarm(timeout)
                except Exception as e:
                    log(f"{system} {workload}: pre-warm failed: {e}")
            self.phase = phase
            status = self.measure(workload, phase, system, lambda: fn(timeout), pids(), stats)
            if status == "timeout":
                for rest in phases[i + 1:]:
                    self.emit({"type": "measurement", "workload": workload, "phase": self.label(rest),
                               "system": system, "status": "skipped",
                               "error": f"after a timeout in {phase}"})
                return

    def find_tree(self, root, timeout) -> dict:
        """`find ROOT/tree | wc -l`: every entry of the tree, its directories and the root too."""
        t = time.monotonic()
        out = run_cmd(["find", str(Path(root) / "tree")], timeout).stdout
        secs = time.monotonic() - t
        entries = out.count("\n")
        want = len(self.tree) + self.tree_shape[0] + 1
        if entries != want:
            raise RuntimeError(f"find showed {entries} entries, expected {want}")
        return {"find_s": round(secs, 3), "entries": entries}

    def run_find(self, systems) -> None:
        """Mount + `find | wc -l` of the tree, timed together (the mount is part of the cost a job
        pays), on a fresh mount with empty caches; warmfs also on a second mount that keeps the
        cold mount's cache dir (the listing index answers, docs/ssd-cache.md), and from a snapshot
        taken before (its time recorded apart, as `snapshot_s`). The local copy has no mount:
        `find` alone."""
        timeout = self.timeout("find")
        for system in systems:
            if system in ("origin", "ceiling", "served") or (system == "local" and self.shape != "plain"):
                continue
            log(f"--- find on {system}")
            if system == "local":
                self.drop("find")
                self.measure("find", "cold", "local", lambda: self.timed(
                    lambda: self.find_tree(self.local, timeout)))
                continue
            m = self.mounts[system]
            phases = (["cold", "index", "snapshot"] if system == "warmfs" and self.shape == "plain"
                      else ["cold"])
            for phase in phases:
                extra = []
                snap = {}
                if phase == "snapshot":
                    try:
                        extra, snap = self.take_snapshot(m, timeout)
                    except Exception as e:
                        self.emit({"type": "measurement", "workload": "find", "phase": self.label(phase),
                                   "system": system, "status": "error", "error": str(e)[:300]})
                        continue
                self.drop("find")

                def fn(m=m, extra=extra, snap=snap):
                    # Emptying the last mount's cache dir is the harness's work, not the job's:
                    # it is done before the clock starts. The index phase follows the cold one
                    # and keeps its cache dir.
                    m.unmount()
                    if phase != "index":
                        shutil.rmtree(m.cache, ignore_errors=True)

                    def mount_and_find():
                        m.extra_args += extra
                        try:
                            m.remount()
                        finally:
                            del m.extra_args[len(m.extra_args) - len(extra):]
                        return self.find_tree(m.root, timeout)
                    r = self.timed(mount_and_find)
                    if m.has_stats:  # after the clock: `warmfs stats` is not the job's either
                        st = m.stats()
                        r["warmfs_requests"] = st["bucket_requests"]
                        # The daemon's memory once it has shown the whole tree.
                        r["warmfs_rss_mib"] = round(st["process"]["rss_bytes"] / MiB, 1)
                    return {**r, **snap}
                try:
                    self.measure("find", phase, system, fn)
                finally:
                    m.unmount()

    def run_fanout(self, systems) -> None:
        """Three mounts with no cache dir of their own (`served`), each reading its own big
        object through the one cache server at once, the server warmed with the three first:
        together against one mount alone (the served seq row)."""
        if "served" not in systems or self.shape != "plain":
            return
        log("--- fanout on served")
        timeout = self.timeout("par4")
        first = self.mounts["served"]
        clients = [first, first.sibling(), first.sibling()]
        keys = self.spec.big_keys()[:len(clients)]
        try:
            first.mount()
            self.dd_many([first.root / k for k in keys], timeout)  # warms the server
            for c in clients:
                c.mount()
            self.drop("fanout")
            self.measure("fanout", "cold", "served",
                         lambda: self.dd_many([c.root / k for c, k in zip(clients, keys)], timeout),
                         pids=[p for c in clients for p in c.pids()])
        except Exception as e:
            self.emit({"type": "measurement", "workload": "fanout", "phase": self.label("cold"),
                       "system": "served", "status": "error", "error": str(e)[:300]})
        finally:
            for c in clients:
                c.unmount()

    def run_epochs(self, systems) -> None:
        """`warmfs plan` for the token file with EPOCHS_MOUNT's cache sizes, then a fresh mount
        with those sizes and EPOCHS shuffled epochs of its 1 MiB windows, each epoch's order
        published first, 8 readers dropping what they read from the page cache: the plan's
        per-epoch bytes and hit ratio next to the mount's (tools/lib/plan_runs.py, as
        tests/integration/test_plan.py does at a small scale). warmfs only."""
        if "warmfs" not in systems:
            return
        log("--- epochs on warmfs" + ("" if self.shape == "plain" else f" ({self.shape} origin)"))
        timeout = self.timeout("epochs")
        m = self.mounts["warmfs"]
        saved = {k: getattr(m, k) for k in EPOCHS_MOUNT}
        try:
            for k, v in EPOCHS_MOUNT.items():
                setattr(m, k, v)
            self.drop("epochs")
            plan = self.plan_token_file(m, timeout)
            m.mount()
            self.measure("epochs", "cold", "warmfs", lambda: self.token_epochs(m, plan, timeout),
                         pids=m.pids(), stats=m.stats)
        except Exception as e:
            self.emit({"type": "measurement", "workload": "epochs", "phase": self.label("cold"),
                       "system": "warmfs", "status": "error", "error": str(e)[:300]})
        finally:
            m.unmount()
            for k, v in saved.items():
                setattr(m, k, v)

    def plan_token_file(self, m, timeout) -> dict:
        """`warmfs plan --json` of the token file for the epochs mount's configuration."""
        probe = self.work / "plan-probe"
        shutil.rmtree(probe, ignore_errors=True)
        run = harness.run_cli(
            ["plan", f"s3://{BUCKET}/{self.spec.token_key.rsplit('/', 1)[0]}", "--endpoint", self.origin.endpoint,
             "--path-style", "--region", "us-east-1", "--epochs", EPOCHS,
             "--memory-cache-size", f"{m.memory_cache_mib}M", "--cache-size", m.cache_size,
             "--cache-dir", str(probe), "--probe-seconds", 0.5 if self.args.smoke else 2, "--json"],
            m.env(), timeout=timeout)
        if run.rc != 0:
            raise RuntimeError(f"warmfs plan failed: {run.stderr.strip()[-300:]}")
        return json.loads(run.stdout)

    def token_epochs(self, m, plan, timeout) -> dict:
        predicted = plan_runs.node_cache_epochs(plan)
        size = self.spec.token_mib * MiB
        measured, verdicts = [], []
        before = m.stats()
        for epoch in range(1, EPOCHS + 1):
            _, listing = self.shuffled_windows(EPOCHS_WINDOW, SHUFFLE_SEED + epoch, "epoch-order.txt")
            r = worker(["windows", m.root, listing, "--threads", 8, "--publish", "--drop"], timeout)
            if r["bytes"] != size:
                raise RuntimeError(f"epoch {epoch} read {r['bytes']} bytes, expected {size}")
            after = m.stats()
            measured.append(plan_runs.measured_epoch(epoch, r["seconds"], size, before, after))
            before = after
        for p, x in zip(predicted, measured):
            verdict, off = plan_runs.judge(p, x)
            verdicts.append({"epoch": p["epoch"], "verdict": verdict, "off": off})
        log("warmfs plan against the run:\n" + "\n".join(plan_runs.comparison_lines(predicted, measured)))
        return {"value": round(sum(x["seconds"] for x in measured), 3), "unit": "s",
                "dataset_bytes": size, "window_bytes": EPOCHS_WINDOW,
                "mount": {"memory_cache_size": f"{m.memory_cache_mib}M", "cache_size": m.cache_size},
                "measured_epochs": measured, "planned_epochs": predicted, "plan_verdicts": verdicts,
                "plan_probe": plan.get("probe"), "plan_dataset": plan.get("dataset"),
                "tool": f"{EPOCHS} epochs of 8 threads preading the next 1 MiB window of a fresh "
                        "shuffle, order published first, pages dropped after each read"}

    def timed(self, fn) -> dict:
        """fn() with its wall time as the measurement's value (seconds)."""
        t = time.monotonic()
        r = fn()
        return {"value": round(time.monotonic() - t, 3), "unit": "s", **r}

    def take_snapshot(self, m, timeout) -> tuple[list[str], dict]:
        """`warmfs snapshot` of the bucket the warmfs mount serves; the mount's extra arguments
        and the snapshot's figures."""
        path = self.work / "bench.wfsnap"
        run = harness.run_cli(["snapshot", "s3://bench", str(path), "--endpoint",
                               self.origin.endpoint, "--path-style", "--region", "us-east-1"],
                              m.env(), timeout=timeout)
        if run.rc != 0:
            raise RuntimeError(f"warmfs snapshot failed: {run.stderr.strip()[-300:]}")
        return ["--snapshot", str(path)], {"snapshot_s": round(run.seconds, 3),
                                           "snapshot_bytes": path.stat().st_size}

    def run_workload(self, workload, systems) -> None:
        if workload == "find":
            self.run_find(systems)
            return
        if workload == "epochs":
            self.run_epochs(systems)
            return
        if workload == "fanout":
            self.run_fanout(systems)
            return
        phases = PHASES[workload]
        for system in systems:
            if self.shape != "plain" and (system in ("local", "ceiling") or "cold" not in phases):
                continue  # these do not touch the origin, or have no cold phase
            if system == "served" and (self.shape != "plain" or workload not in SERVED_WORKLOADS):
                continue  # its reads come from a warmed server: the origin's shape is not seen
            log(f"--- {workload} on {system}" + ("" if self.shape == "plain" else f" ({self.shape} origin)"))
            if system == "local":
                ph = [p for p in phases if p != "warm-dropped"]
                self.run_phases(workload, "local",
                                lambda t: self.file_workload(workload, self.local, t, "local"), ph,
                                prewarm=lambda t: self.pre_warm(workload, self.local, t))
            elif system == "origin":
                self.run_phases(workload, "origin", lambda t: self.origin_workload(workload, t), ["cold"])
            elif system == "ceiling":
                if workload not in CEILING_WORKLOADS:
                    continue
                c = self.ceiling
                c.size_mib = self.spec.token_mib if workload == "rand" else self.spec.big_mib
                c.files = 1 if workload == "rand" else self.spec.big_count
                try:
                    c.mount()
                    self.run_phases(workload, "ceiling", lambda t: self.ceiling_workload(workload, t),
                                    phases, prewarm=lambda t: self.pre_warm_ceiling(workload, t))
                except Exception as e:
                    self.emit({"type": "measurement", "workload": workload, "phase": self.label("cold"),
                               "system": "ceiling", "status": "error", "error": str(e)[:300]})
                finally:
                    c.unmount()
            else:
                m = self.mounts[system]
                try:
                    if system == "served":
                        # One pass first, through a mount of its own, warms the server; the
                        # measured mount starts with nothing but what the server holds.
                        m.mount()
                        if workload == "rand":  # the whole token file, not fio's sample of it
                            self.pre_warm(workload, m.root, self.timeout(workload))
                        else:
                            self.file_workload(workload, m.root, self.timeout(workload), system)
                    m.mount()
                    self.run_phases(workload, system,
                                    lambda t: self.file_workload(workload, m.root, t, system), phases,
                                    pids=m.pids, stats=m.stats if m.has_stats else None,
                                    prewarm=lambda t: self.pre_warm(workload, m.root, t))
                except Exception as e:
                    self.emit({"type": "measurement", "workload": workload, "phase": self.label("cold"),
                               "system": system, "status": "error", "error": str(e)[:300]})
                finally:
                    m.unmount()
                if workload == "ckpt":
                    with contextlib.suppress(Exception):
                        bench_origin.clear_prefix(self.origin.client(direct=True), "ckpt/")

    def pre_warm_ceiling(self, workload, timeout) -> None:
        if workload == "rand":
            run_cmd(["dd", f"if={self.ceiling.root / 'f0'}", "of=/dev/null", "bs=1M", "status=none"],
                    timeout)

    def snapshot_binaries(self) -> None:
        """Run copies of warmfs and fuse-ceiling: build/ is shared with people rebuilding it, and
        a binary relinked in the middle of a run would mix two versions (or be missing)."""
        import bench_systems
        bindir = self.work / "bin"
        bindir.mkdir(parents=True, exist_ok=True)
        # Keyed by what the binary is, not its file name: WARMFS_BIN may name a copy elsewhere.
        for name, src, setter in (
                ("warmfs", harness.WARMFS, lambda p: setattr(harness, "WARMFS", p)),
                ("fuse-ceiling", bench_systems.CEILING_BIN,
                 lambda p: setattr(bench_systems, "CEILING_BIN", p))):
            for _ in range(60):  # a link in progress: wait for it
                if src.exists():
                    break
                time.sleep(5)
            if src.exists():
                dst = bindir / name
                self.binary_mtimes[name] = datetime.datetime.fromtimestamp(
                    src.stat().st_mtime, datetime.timezone.utc).isoformat(timespec="seconds")
                shutil.copy2(src, dst)
                setter(dst)

    def meta(self, systems) -> dict:
        def cmd(argv):
            with contextlib.suppress(Exception):
                return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
            return ""
        cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                    if line.startswith("model name")), platform.processor())
        mem = int(next(line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal")))
        # Only the systems in this run: a smoke run (warmfs only) must not need the peers installed.
        versions = {name: m.version() for name, m in self.mounts.items() if name in systems}
        if "warmfs" in versions:
            versions["warmfs"] += f" (binary built {self.binary_mtimes.get('warmfs', '?')})"
        versions["libfuse"] = "libfuse " + cmd(["pkg-config", "--modversion", "fuse3"])
        versions["s3rver"] = json.loads((harness.S3RVER_JS.parents[1] / "package.json").read_text())["version"]
        versions["node"] = cmd(["node", "--version"])
        versions["fio"] = cmd(["fio", "--version"]) or "absent (python pread instead)"
        versions["curl"] = cmd(["curl", "--version"]).split("\n")[0][:40]
        versions["aws"] = cmd(["aws", "--version"]).split(" ")[0]
        debian = cmd(["cat", "/etc/debian_version"])
        return {"type": "meta", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "spec": self.spec.key(), "systems": systems,
                "command": " ".join(["tools/bench/run", *sys.argv[1:]]),
                "machine": {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem / 2**20, 1),
                            "kernel": platform.release(), "debian": debian},
                "versions": versions, "first_byte_delay_ms": self.args.first_byte_ms,
                "bandwidth_mbps": self.args.bandwidth_mbps,
                "origin_shapes": {k: SHAPES[k] for k in self.args.origin_shape}, "rand_seconds": self.args.rand_seconds,
                "warmfs_memory_cache_mib": self.args.memory_cache_mib,
                "warmfs_args": self.args.warmfs_arg}

    def run(self, workloads, systems) -> int:
        for d in (self.data, self.work, self.logs):
            d.mkdir(parents=True, exist_ok=True)
        need = self.spec.total_bytes() * 3.5 / 2**30
        free = shutil.disk_usage(self.data).free / 2**30
        if free < need and not (self.data / "manifest.json").exists():
            log(f"need about {need:.0f} GiB free under {self.data}, have {free:.0f} GiB")
            return 2
        self.snapshot_binaries()
        self.origin = Origin(self.data, self.logs, self.args.first_byte_ms, self.args.bandwidth_mbps)
        self.mounts = {}
        for name in ("warmfs", "served", "s3fs", "rclone"):
            ours = name in ("warmfs", "served")
            extra = self.args.warmfs_arg if ours else []
            kw = {"memory_cache_mib": self.args.memory_cache_mib} if ours else {}
            self.mounts[name] = MOUNTED[name](self.work, self.origin, self.logs, extra, **kw)
        self.ceiling = Ceiling(self.work, self.origin, self.logs, [])
        try:
            self.origin.start()
            self.manifest = bench_origin.prepare(self.data, self.spec, self.origin)
            self.tree_shape = bench_origin.TREE_SMOKE if self.args.smoke else bench_origin.TREE_FULL
            self.tree = (bench_origin.prepare_tree(self.data, self.tree_shape, self.origin)
                         if "find" in workloads else [])
            bench_origin.clear_prefix(self.origin.client(direct=True), "ckpt/")
            self.warm_up_origin()
            self.emit(self.meta(systems))
            for shape in self.args.origin_shape:
                self.set_shape(shape)
                for w in workloads:
                    self.run_workload(w, systems)
        finally:
            for m in [*self.mounts.values(), self.ceiling]:
                m.unmount()
            self.mounts["served"].stop_server()
            self.origin.stop()
        return 0


def parse_list(value, allowed, what):
    items = [x.strip() for x in value.split(",") if x.strip()]
    bad = [x for x in items if x not in allowed]
    if bad:
        raise SystemExit(f"tools/bench/run: unknown {what} {', '.join(bad)} (choose from {', '.join(allowed)})")
    return items


def main() -> int:
    ap = argparse.ArgumentParser(prog="tools/bench/run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes, warmfs only, results under build/bench-smoke (CI)")
    ap.add_argument("--only", default=",".join(WORKLOADS), help=f"workloads ({','.join(WORKLOADS)})")
    ap.add_argument("--systems", default=None, help=f"systems ({','.join(SYSTEMS)}); default all")
    ap.add_argument("--data-dir", help="data and work dir (default /var/tmp/warmfs-bench/full|smoke)")
    ap.add_argument("--results", help="JSON-lines results file, merged into "
                    "(default docs/benchmarks.jsonl; with --smoke build/bench-smoke/results.jsonl)")
    ap.add_argument("--doc", help="markdown report (default docs/benchmarks.md, chart beside it)")
    ap.add_argument("--fresh", action="store_true", help="drop earlier results instead of merging")
    ap.add_argument("--first-byte-ms", type=float, default=15.0, help="proxy first-byte delay (15)")
    ap.add_argument("--bandwidth-mbps", type=float, default=0.0, help="proxy bandwidth cap, total (off)")
    ap.add_argument("--origin-shape", default="plain",
                    help=f"origin shapes to measure, in turn ({','.join(SHAPES)}; default plain): "
                    "capped holds each connection to 50 MB/s with 25 ms first byte; its cold rows "
                    "are recorded as phase cold-capped")
    ap.add_argument("--rand-seconds", type=float, default=None, help="fio runtime per pass (10; smoke 1)")
    ap.add_argument("--memory-cache-mib", type=int, default=2048, help="warmfs --memory-cache-size (2048)")
    ap.add_argument("--warmfs-arg", action="append", default=[],
                    help="extra argument for `warmfs mount` (repeat), e.g. --warmfs-arg=--read-write")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("tools/bench/run: needs root (drop_caches, mounts)")
    workloads = parse_list(args.only, WORKLOADS, "workload")
    systems = parse_list(args.systems or ("warmfs" if args.smoke else ",".join(SYSTEMS)), SYSTEMS, "system")
    args.origin_shape = parse_list(args.origin_shape, list(SHAPES), "origin shape")
    if args.rand_seconds is None:
        args.rand_seconds = 1.0 if args.smoke else 10.0
    out_dir = REPO / "build" / "bench-smoke"
    args.results = args.results or str(out_dir / "results.jsonl" if args.smoke else REPO / "docs" / "benchmarks.jsonl")
    doc = Path(args.doc or (out_dir / "benchmarks.md" if args.smoke else REPO / "docs" / "benchmarks.md"))
    if args.smoke:
        args.fresh = True
    bench = Bench(args)
    t0 = time.monotonic()
    rc = bench.run(workloads, systems)
    if rc:
        return rc
    merged = bench_report.merge(Path(args.results), bench.records, fresh=args.fresh)
    bench_report.write(merged, doc, chart=not args.smoke or bench_report.chart_available())
    log(f"done in {time.monotonic() - t0:.0f}s; results {args.results}, report {doc}")
    bad = [r for r in bench.records if r.get("type") == "measurement" and r["status"] != "ok"
           and not bench_report.known_failure(r)]
    if args.smoke and bad:
        for r in bad:
            log(f"smoke: {r['workload']}/{r['phase']}/{r['system']}: {r['status']}: {r.get('error')}")
        return 1
    return 0
