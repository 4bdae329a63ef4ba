"""docs/benchmarks.md and docs/benchmarks.png from the benchmark's JSON lines.

merge() keeps, for each (workload, phase, system), the newest line, so re-running one workload
(`tools/bench/run --only ckpt --systems warmfs`) replaces only those lines. write() renders the
table (rows: workload and phase; columns: the limits, then the systems), the targets of issue 6
with this run's ratios, and the chart, drawn by Debian's /usr/bin/python3 with matplotlib
(tools/bench/bench_chart.py).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

CHART_PYTHON = "/usr/bin/python3"
CHART_SCRIPT = Path(__file__).resolve().parent / "bench_chart.py"
COLUMNS = ["local", "origin", "ceiling", "warmfs", "served", "s3fs", "rclone"]
COLUMN_TITLES = {"local": "local limit", "origin": "origin limit", "ceiling": "FUSE ceiling",
                 "warmfs": "warmfs", "served": "warmfs via a cache server", "s3fs": "s3fs",
                 "rclone": "rclone"}
PEERS = ["warmfs", "s3fs", "rclone"]
ROWS = [("seq", "cold"), ("seq", "warm"), ("seq", "warm-dropped"),
        ("par4", "cold"), ("par4", "warm"), ("par4", "warm-dropped"),
        ("rand", "cold"), ("rand", "warm"), ("rand", "warm-dropped"),
        ("small", "cold"), ("small", "warm"), ("small", "warm-dropped"),
        ("shuffle", "cold"), ("shuffle-order", "cold"),
        ("ls", "cold"), ("ls", "warm"),
        ("tar", "cold"), ("tar", "warm"), ("tar", "warm-dropped"),
        ("records", "cold"), ("records-order", "cold"),
        ("windows", "cold"), ("windows-order", "cold"), ("epochs", "cold"),
        ("ckpt", "cold"), ("fanout", "cold"),
        ("find", "cold"), ("find", "index"), ("find", "snapshot")]
# Each cold row again on the capped origin (tools/bench/run --origin-shape capped), after it.
ROWS = [r for w, p in ROWS for r in ([(w, p), (w, "cold-capped")] if p == "cold" else [(w, p)])]
WORKLOAD_TITLES = {
    "seq": "sequential read, one object, 1 MiB reads (MB/s)",
    "par4": "four objects read in parallel (MB/s, total)",
    "rand": "random 4 KiB reads, token file, fio 4 jobs (IOPS; p50/p99)",
    "small": "small files, all read by 8 threads (files/s)",
    "shuffle": "small files, one shuffled epoch by 8 loader threads (files/s)",
    "shuffle-order": "the same epoch, its order published to the mount first (files/s)",
    "ls": "`ls -lR` of the small-file tree (s; warmfs requests)",
    "tar": "tar shards iterated sample by sample (samples/s)",
    "records": "100 KiB records in the tar shards, one shuffled epoch, map-style, 8 threads (records/s)",
    "records-order": "the same records, the order (as ranges) published first (records/s)",
    "windows": "token windows (32 KiB) of the 512 MiB token file, one shuffled epoch, 8 threads (windows/s)",
    "windows-order": "the same windows, the order (as ranges) published first (windows/s)",
    "epochs": "3 shuffled epochs of 1 MiB windows, token file twice the SSD tier (s; local share per epoch, plan's in brackets)",
    "ckpt": "checkpoint written, fsync (s to fsync return)",
    "fanout": "three mounts, each reading its own 1 GiB object through one cache server at once (MB/s, total)",
    "find": "mount + `find | wc -l` of a tree of 100,000 tiny objects (s; warmfs requests)",
}
PHASE_TITLES = {"cold": "cold", "cold-capped": "cold, capped origin (50 MB/s per connection, 25 ms)", "warm": "warm (page cache)", "warm-dropped": "warm, page cache dropped",
                "snapshot": "from a snapshot (docs/snapshots.md)",
                "index": "from the listing index, after a remount (docs/ssd-cache.md)"}
LOWER_IS_BETTER = {"ls", "ckpt", "find", "epochs"}
# The order rows and the row without the order they are compared with (issue 19).
ORDER_PAIRS = [("shuffle-order", "shuffle", "shuffled epoch"),
               ("records-order", "records", "shuffled records"),
               ("windows-order", "windows", "shuffled token windows")]


def known_failure(rec: dict) -> bool:
    """A failure that is expected for now: warmfs's checkpoint while warmfs is read-only."""
    return (rec.get("system") == "warmfs" and rec.get("workload") == "ckpt" and
            "Read-only file system" in (rec.get("error") or ""))


def merge(path: Path, new: list[dict], fresh: bool = False) -> list[dict]:
    old = []
    if path.exists() and not fresh:
        old = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    keyed: dict = {}
    metas: dict = {}
    for rec in old + new:
        if rec.get("type") == "meta":
            metas[rec["run"]] = rec
        else:
            keyed[(rec["workload"], rec["phase"], rec["system"])] = rec
    runs = {r["run"] for r in keyed.values()}
    out = [m for run, m in sorted(metas.items()) if run in runs] + list(keyed.values())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in out))
    return out


def chart_available() -> bool:
    try:
        return subprocess.run([CHART_PYTHON, "-c", "import matplotlib"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def fmt_num(v: float) -> str:
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def cell(rec: dict | None) -> str:
    if rec is None:
        return ""
    if rec["status"] != "ok":
        why = (rec.get("error") or "").replace("|", "/")
        m = re.search(r"\[Errno \d+\] ([^:']+)", why)
        short = "EROFS" if "Read-only file system" in why else (m.group(1).strip() if m else why[:60])
        if rec["workload"] == "ckpt" and "' -> '" in why:
            short += " at rename"
        return f"{rec['status']} ({short})" if short else rec["status"]
    w, v = rec["workload"], rec["value"]
    if w == "epochs":
        got = "/".join(f"{x['local']:.2f}" for x in rec["measured_epochs"])
        planned = "/".join(f"{p['hit_ratio']['local']:.2f}" for p in rec["planned_epochs"])
        return f"{v:.1f} (local {got} [{planned}])"
    if w == "rand":
        return f"{fmt_num(v)} ({fmt_num(rec['p50_us'])}/{fmt_num(rec['p99_us'])} µs)"
    if w in ("ls", "find"):
        s = f"{v:.2f}"
        req = rec.get("warmfs_requests")
        if req:
            s += f" (L{req.get('list', 0)} H{req.get('head', 0)} G{req.get('get', 0)})"
        elif "list_requests" in rec:
            s += f" (L{rec['list_requests']})"
        return s
    if w == "ckpt":
        s = f"{v:.2f}"
        if rec["system"] not in ("local", "origin"):
            flags = []
            if rec.get("durable_at_fsync") is not None:
                flags.append("durable at fsync" if rec["durable_at_fsync"] else "not in bucket at fsync")
            if rec.get("visible_after_s") is not None and not rec.get("durable_at_rename"):
                flags.append(f"visible {rec['visible_after_s']:.1f} s after rename")
            if rec.get("close_rename_s") is not None:
                flags.append(f"close+rename {rec['close_rename_s']:.2f} s")
            s += " (" + "; ".join(flags) + ")"
        return s
    return fmt_num(v)


def value(table, w, p, s):
    rec = table.get((w, p, s))
    return rec["value"] if rec and rec["status"] == "ok" else None


def reference(table, w, p):
    """(system, value) a row's ratios are taken against: cold -> origin, warm -> local warm,
    warm-dropped -> the FUSE ceiling where it applies, else local warm; snapshot and index ->
    local cold."""
    order = {"cold": ["origin", "local"], "cold-capped": ["origin", "local"], "warm": ["local"],
             "warm-dropped": ["ceiling", "local"], "snapshot": ["local"], "index": ["local"]}[p]
    for s in order:
        if s == "local":
            ph = "cold" if p in ("cold", "cold-capped", "snapshot", "index") else "warm"
        elif s == "origin":
            ph = p  # the origin limit of the same shape
        else:
            ph = p
        v = value(table, w, ph, s)
        if v:
            return s, v
    return None, None


def ratio(w, v, ref):
    if v is None or not ref:
        return None
    return ref / v if w in LOWER_IS_BETTER else v / ref


def targets(table, metas) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for the targets this run measures (the benchmark issues'):
    the SSD tier's and the cache server's 4 KiB misses and the served-versus-own-SSD ratio are
    measured by tools/bench/randread.py and serve_bench.py instead (docs/benchmark-misses.md)."""
    out = []

    def add(text, measured, ok):
        out.append((text, measured, "n/a" if ok is None else ("met" if ok else "**missed**")))

    def r(a, b, lower=False):
        if a is None or b is None:
            return None
        return (b / a) if lower else (a / b)

    wf = lambda w, p: value(table, w, p, "warmfs")  # noqa: E731
    x = r(wf("seq", "warm"), value(table, "seq", "warm", "local"))
    add("warm seq (page cache) >= 0.8x local warm", f"{x:.2f}x" if x else "-", None if x is None else x >= 0.8)
    x = r(wf("seq", "warm-dropped"), value(table, "seq", "warm-dropped", "ceiling"))
    add("warm seq from warmfs's tiers (page cache dropped) >= 0.8x FUSE ceiling (page cache dropped)",
        f"{x:.2f}x" if x else "-", None if x is None else x >= 0.8)
    x = r(wf("seq", "cold"), value(table, "seq", "cold", "origin"))
    add("cold seq >= 0.9x raw origin", f"{x:.2f}x" if x else "-", None if x is None else x >= 0.9)
    peers = [v for v in (value(table, "seq", "cold", "s3fs"), value(table, "seq", "cold", "rclone")) if v]
    x = r(wf("seq", "cold"), max(peers)) if peers else None
    add("cold seq ahead of both peers", f"{x:.2f}x the faster peer" if x else "-", None if x is None else x > 1)
    for p, shape in (("cold", ""), ("cold-capped", " (capped origin)")):
        x = r(wf("par4", p), value(table, "par4", p, "origin"))
        add(f"cold four streams{shape} >= 0.7x origin limit", f"{x:.2f}x" if x else "-",
            None if x is None else x >= 0.7)
        peers = [v for v in (value(table, "par4", p, "s3fs"), value(table, "par4", p, "rclone")) if v]
        x = r(wf("par4", p), max(peers)) if peers else None
        add(f"cold four streams{shape} ahead of both peers", f"{x:.2f}x the faster peer" if x else "-",
            None if x is None else x > 1)
    x = r(wf("seq", "cold-capped"), value(table, "seq", "cold-capped", "origin"))
    add("cold seq (capped origin) >= 0.9x origin limit", f"{x:.2f}x" if x else "-", None if x is None else x >= 0.9)
    peers = [v for v in (value(table, "seq", "cold-capped", "s3fs"), value(table, "seq", "cold-capped", "rclone")) if v]
    x = r(wf("seq", "cold-capped"), max(peers)) if peers else None
    add("cold seq (capped origin) ahead of both peers", f"{x:.2f}x the faster peer" if x else "-",
        None if x is None else x > 1)
    peers = [v for v in (value(table, "small", "cold", "s3fs"), value(table, "small", "cold", "rclone")) if v]
    x = r(wf("small", "cold"), max(peers)) if peers else None
    add("small files cold >= 3x the faster peer", f"{x:.2f}x" if x else "-", None if x is None else x >= 3)
    x = r(wf("small", "warm"), value(table, "small", "warm", "local"))
    add("small files warm >= 0.5x local warm", f"{x:.2f}x" if x else "-", None if x is None else x >= 0.5)
    for ordered, plain, what in ORDER_PAIRS:
        for p, shape in (("cold", ""), ("cold-capped", " (capped origin)")):
            if p != "cold" and (plain, p, "origin") not in table and (ordered, p, "warmfs") not in table:
                continue
            x = r(wf(ordered, p), value(table, plain, p, "origin"))
            add(f"{what} cold{shape}, order published >= 0.8x origin limit (64 in flight)",
                f"{x:.2f}x" if x else "-", None if x is None else x >= 0.8)
            x = r(wf(ordered, p), wf(plain, p))
            add(f"{what} cold{shape}, order published >= 2x warmfs without it",
                f"{x:.2f}x" if x else "-", None if x is None else x >= 2)
    rec = table.get(("ls", "cold", "warmfs"))
    if rec and rec["status"] == "ok" and rec.get("warmfs_requests"):
        q = rec["warmfs_requests"]
        add("ls -lR cold: LIST requests only",
            f"{q.get('list', 0)} LIST, {q.get('head', 0)} HEAD, {q.get('get', 0)} GET",
            q.get("head", 0) == 0 and q.get("get", 0) == 0)
    else:
        add("ls -lR cold: LIST requests only", "-", None)
    x = r(wf("par4", "warm-dropped"), value(table, "par4", "warm-dropped", "ceiling"))
    add("four streams from warmfs's tiers (page cache dropped) >= 0.5x FUSE ceiling",
        f"{x:.2f}x" if x else "-", None if x is None else x >= 0.5)
    x = r(wf("par4", "warm-dropped"), value(table, "par4", "warm-dropped", "s3fs"))
    add("four streams from warmfs's tiers (page cache dropped) ahead of s3fs",
        f"{x:.2f}x s3fs" if x else "-", None if x is None else x > 1)
    x = r(wf("ls", "warm"), value(table, "ls", "warm", "local"), lower=True)
    add("ls -lR warm within 2x of local", f"{1 / x:.2f}x the local time" if x else "-",
        None if x is None else 1 / x <= 2)
    x = r(value(table, "fanout", "cold", "served"), value(table, "seq", "cold", "served"))
    add("three mounts through one cache server at once >= one mount alone",
        f"{x:.2f}x one alone" if x else "-", None if x is None else x >= 1)
    x = r(wf("rand", "warm"), value(table, "rand", "warm", "local"))
    add("random 4K warm >= 0.5x local IOPS", f"{x:.2f}x" if x else "-", None if x is None else x >= 0.5)
    rec = table.get(("rand", "warm", "warmfs"))
    p99 = rec.get("p99_us") if rec and rec["status"] == "ok" else None
    add("random 4K warm p99 < 1 ms", f"{p99:.0f} µs" if p99 is not None else "-", None if p99 is None else p99 < 1000)
    x = r(wf("ckpt", "cold"), value(table, "ckpt", "cold", "origin"), lower=True)
    add("checkpoint fsync within 1.3x of `aws s3 cp` of the same bytes",
        f"{1 / x:.2f}x the aws s3 cp time" if x else "-", None if x is None else 1 / x <= 1.3)
    rss = [rec["rss_max_mib"] for (w, p, s), rec in table.items() if s == "warmfs" and rec.get("rss_max_mib")]
    cache = next((m.get("warmfs_memory_cache_mib") for m in reversed(metas)), None)
    if rss and cache:
        add(f"daemon RSS <= memory cache ({cache} MiB) + 256 MiB", f"max {max(rss):.0f} MiB",
            max(rss) <= cache + 256)
    return out


def write(records: list[dict], doc: Path, chart: bool = True) -> None:
    metas = [r for r in records if r.get("type") == "meta"]
    table = {(r["workload"], r["phase"], r["system"]): r for r in records if r.get("type") == "measurement"}
    present = [c for c in COLUMNS if any(s == c for (_, _, s) in table)]
    lines = [HEADER.strip(), ""]
    lines += runs_section(metas, table)
    lines += ["## Results", "",
              "Each cell is one measurement; ratios are only meaningful within one run. "
              "`error`/`timeout` cells say what happened. Rows: workload and phase; "
              "`cold` = fresh mount, empty caches, page cache dropped; `warm` = a second pass "
              "in the same mount; `warm, page cache dropped` = a second pass served by the "
              "system's own tiers. The origin limit has no warm phase; the FUSE ceiling applies "
              "to reads of big files only.", ""]
    lines.append("| workload | phase | " + " | ".join(COLUMN_TITLES[c] for c in present) + " |")
    lines.append("| --- | --- | " + " | ".join("---:" for _ in present) + " |")
    for w, p in ROWS:
        if not any((w, p, c) in table for c in present):
            continue
        lines.append(f"| {WORKLOAD_TITLES[w]} | {PHASE_TITLES[p]} | " +
                     " | ".join(cell(table.get((w, p, c))) for c in present) + " |")
    lines.append("")
    rss_rows = [(s, max((r.get("rss_max_mib") or 0) for (w, p, ss), r in table.items() if ss == s))
                for s in PEERS if any(ss == s for (_, _, ss) in table)]
    if rss_rows:
        cache = next((m.get("warmfs_memory_cache_mib") for m in reversed(metas)), None)
        lines += ["Daemon resident memory, max over all measurements (sampled every 100 ms): " +
                  ", ".join(f"{s} {v:.0f} MiB" for s, v in rss_rows) +
                  (f" (warmfs's memory cache is {cache} MiB)." if cache else "."), ""]
        per = [f"{w}: {table[(w, p, 'warmfs')]['rss_max_mib']:.0f}" for (w, p) in ROWS
               if p == "cold" and (w, p, "warmfs") in table and table[(w, p, "warmfs")].get("rss_max_mib")]
        if per:
            lines += ["warmfs RSS max per workload's cold pass (MiB): " + ", ".join(per) + ".", ""]
    lines += ["## Targets, warmfs in this run", "", "| target | measured | verdict |",
              "| --- | --- | --- |"]
    lines += [f"| {t} | {m} | {v} |" for t, m, v in targets(table, metas)]
    lines.append("")
    lines += epochs_section(table)
    png = doc.with_suffix(".png")
    if chart:
        rows = []
        for w, p in ROWS:
            ref_sys, ref = reference(table, w, p)
            if ref is None:
                continue
            notes = {}
            for s in PEERS:
                rec = table.get((w, p, s))
                if rec and rec["status"] != "ok":
                    notes[s] = "EROFS" if "Read-only" in (rec.get("error") or "") else rec["status"]
                elif rec and w == "ckpt" and rec.get("durable_at_fsync") is False:
                    notes[s] = "not durable at fsync"
            rows.append({"label": f"{w} {p}", "reference": ref_sys, "notes": notes,
                         **{s: ratio(w, value(table, w, p, s), ref) for s in PEERS}})
        data = doc.parent / (doc.stem + "-chart.json")
        data.write_text(json.dumps({"rows": rows, "title": chart_title(metas)}))
        try:
            subprocess.run([CHART_PYTHON, str(CHART_SCRIPT), str(data), str(png)], check=True,
                           capture_output=True, timeout=120)
            lines += ["## Chart", "",
                      f"![ratios]({png.name})", "",
                      "Each bar is a system's figure divided by the row's reference (higher is "
                      "better; for `ls` and the checkpoint, reference time / system time): cold "
                      "rows against the origin limit, warm rows against the local limit warm, "
                      "page-cache-dropped rows against the FUSE ceiling where it applies (else "
                      "local warm). The line at 1 is the reference.", ""]
        except Exception as e:
            lines += [f"(chart not drawn: {e})", ""]
        finally:
            data.unlink(missing_ok=True)
    lines += [NOTES.strip(), ""]
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text("\n".join(lines))


def epochs_section(table) -> list[str]:
    """The `epochs` rows: `warmfs plan`'s prediction per epoch next to the run's, and whether
    the run is within the tolerances tests/integration/test_plan.py holds the plan to."""
    recs = [rec for (w, p, s), rec in sorted(table.items())
            if w == "epochs" and s == "warmfs" and rec["status"] == "ok"]
    if not recs:
        return []
    out = ["## A dataset twice the SSD tier: `warmfs plan` against the run", "",
           "The token file read in 1 MiB windows (one chunk each), three epochs, each a fresh "
           "shuffle with its order published first, 8 readers dropping what they read from the "
           "page cache, through a fresh mount with the sizes below; before it, `warmfs plan` of "
           "the same prefix with the same sizes (its `node-cache` scenario). `local` is the "
           "share of the dataset not pulled from the bucket (`bucket_bytes_read` in the mount's "
           "stats). Verdicts use tests/integration/test_plan.py's tolerances "
           "(tools/lib/plan_runs.py): bytes within 15%, local share within 0.08, time within 2x.",
           ""]
    for rec in recs:
        d = rec.get("plan_dataset") or {}
        mount = rec.get("mount", {})
        out += [f"Phase `{rec['phase']}` (run {rec['run']}): {d.get('bytes', 0) / 2**20:.0f} MiB in "
                f"{d.get('chunks', '?')} chunks, `--memory-cache-size {mount.get('memory_cache_size')} "
                f"--cache-size {mount.get('cache_size')}`.", "",
                "| epoch | plan s | plan from bucket | plan local (worst) | measured s | "
                "measured from bucket | measured local | SSD hits | chunks fetched ahead (dropped unread) | verdict |",
                "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
        verdicts = {v["epoch"]: v for v in rec.get("plan_verdicts", [])}
        for p, x in zip(rec["planned_epochs"], rec["measured_epochs"]):
            v = verdicts.get(p["epoch"], {})
            why = v.get("verdict", "?") + (": " + "; ".join(v["off"]) if v.get("off") else "")
            out.append(f"| {p['epoch']} | {p['seconds']:.2f} | {p['bucket_bytes'] / 2**20:.1f} MiB | "
                       f"{p['hit_ratio']['local']:.2f} ({p['hit_ratio']['worst']:.2f}) | "
                       f"{x['seconds']:.2f} | {x['bucket_bytes'] / 2**20:.1f} MiB | "
                       f"{x['local']:.2f} | {x['disk_hit_bytes'] / 2**20:.1f} MiB | "
                       f"{x.get('prefetched_chunks', '-')} ({x.get('wasted_chunks', '-')}) | {why} |")
        out.append("")
    return out


def chart_title(metas) -> str:
    if not metas:
        return "warmfs benchmark"
    m = metas[-1]
    return f"warmfs vs peers, ratio to the row's limit ({m['date'][:10]}, {m['machine']['cores']} cores)"


def runs_section(metas, table=None) -> list[str]:
    out = ["## Runs in this table", ""]
    rows_of = {}
    for (w, p, s), rec in (table or {}).items():
        rows_of.setdefault(rec["run"], set()).add(w)
    if not metas:
        return out + ["(no run metadata)", ""]
    for m in metas:
        spec = m["spec"]
        mach = m["machine"]
        v = m["versions"]
        mine = ", ".join(w for w in WORKLOAD_TITLES if w in rows_of.get(m["run"], ()))
        command = f"`{m['command']}`, " if m.get("command") else ""
        out.append(f"- run {m['run']} ({m['date']}; {command}its rows: {mine or 'none'}), data set `{spec['name']}`, systems "
                   f"{', '.join(m['systems'])}: {mach['cpu']}, {mach['cores']} cores, "
                   f"{mach['memory_gib']} GiB, kernel {mach['kernel']}, Debian {mach['debian']}; "
                   f"origin s3rver {v.get('s3rver')} (node {v.get('node')}) behind tools/s3proxy with "
                   f"{m['first_byte_delay_ms']:g} ms first-byte delay"
                   f"{', ' + str(m['bandwidth_mbps']) + ' Mbit/s cap' if m['bandwidth_mbps'] else ', no bandwidth cap'}"
                   + "".join(f" (then {k}: {sh['bandwidth_mbps']:g} Mbit/s per {sh['bandwidth_scope']}, "
                             f"{sh['first_byte_delay_ms']:g} ms first byte)"
                             for k, sh in (m.get("origin_shapes") or {}).items() if sh) + "; "
                   f"{v.get('warmfs')} (memory cache {m['warmfs_memory_cache_mib']} MiB"
                   f"{', extra args ' + ' '.join(m['warmfs_args']) if m['warmfs_args'] else ''}), "
                   + ", ".join(str(v[k]) for k in ("s3fs", "rclone", "libfuse", "fio", "aws")
                               if v.get(k))
                   + f"; fio runtime {m['rand_seconds']:g} s per pass.")
    return out + [""]


HEADER = """
# Benchmarks

Generated by `tools/bench/run` (issue 6); do not edit by hand: re-run it. The raw measurements,
one JSON line each, are in `benchmarks.jsonl` beside this file (with warmfs's request and
byte counters per measurement: `warmfs_requests`, `warmfs_bucket_bytes_read`, `warmfs_disk_hit_bytes`, ...).
"""

NOTES = """
## How to run

```sh
bash tools/lib/install-deps.sh && bash tools/lib/install-bench-deps.sh   # s3fs, rclone, fio, matplotlib
ninja -C build                                   # warmfs and build/tools/fuse-ceiling/fuse-ceiling
tools/bench/run                                  # every row, plain origin (~35 min; data made once, ~5.75 GiB, ~3 min)
tools/bench/run --origin-shape plain,capped --fresh   # every row on both origin shapes (~63 min): this page
tools/bench/run --only ckpt --systems warmfs,origin   # one workload again; merged into the table
tools/bench/run --only seq,small --systems warmfs,s3fs
tools/bench/run --only shuffle,shuffle-order,records,records-order,windows,windows-order,epochs \\
    --systems local,origin,warmfs,s3fs --origin-shape plain,capped   # the loader rows (~9 min)
tools/bench/run --smoke                          # tiny sizes, warmfs only, < 60 s (CI runs this)
```

Root is needed (page-cache drops, mounts). Options: `--first-byte-ms` (15), `--bandwidth-mbps`
(total cap, off), `--origin-shape plain,capped` (the cold rows again on an origin that holds each
connection to 50 MB/s with 25 ms first byte, as an object store does: rows `cold, capped origin`), `--rand-seconds` (10), `--memory-cache-mib` (2048), `--warmfs-arg=ARG`
(repeatable, passed to `warmfs mount`), `--data-dir` (default `/var/tmp/warmfs-bench/full`),
`--results`, `--doc`, `--fresh` (forget earlier lines instead of merging). Every mount is
unmounted on the way out, and each measurement has a timeout that reports `timeout` and moves on.

## What is measured

- Origin: s3rver (npm) on a persistent store, behind `tools/s3proxy` with a first-byte delay per
  request. After each page-cache drop the harness reads the origin's own files back into the page
  cache, so the origin behaves like an object store (latency, no disk) and local disk speed
  does not leak into the cold figures. Before the first measurement the first big object is
  fetched twice through the proxy, unmeasured: a fresh s3rver serves its first GiB or two
  slower, which otherwise penalised whichever system came first.
- Data (made once, reused): four 1 GiB objects (`big/`), a 512 MiB token file (`token/`), 4,000
  files of 64 KiB in 8 folders (`small/`), 32 WebDataset-style tar shards of ~32 MiB holding
  (100 KiB `.bin`, `.json` label) samples (`shards/`), and a local copy of all of it.
- seq: `dd bs=1M` of one object. par4: four `dd` at once, total bytes / wall time.
- rand: fio `randread`, 4 KiB, psync, 4 jobs, time-based; IOPS and completion-latency p50/p99.
  Cold (the first seconds of a fresh mount) and page-cache-dropped passes use O_DIRECT, so every
  read reaches the filesystem: buffered, the page cache absorbs the re-reads of a 512 MiB file
  within a second. The warm pass is buffered (page-cache hits). Warm passes follow one
  sequential read of the whole token file (so the caches hold it). The local limit's cold pass
  is O_DIRECT on the local disk.
  The origin limit does 4 threads of 4 KiB range GETs on kept-alive connections.
- small: walk the tree and read every file with 8 threads (files/s, the walk included).
  The origin limit lists, then GETs with `curl -Z --parallel-max 64`, as many GETs in flight
  as warmfs's fetch threads (one GET per file is latency bound; the figure with 8 in flight,
  the readers' own parallelism, is `files_per_s_at_8` in the JSON line).
- shuffle: one shuffled epoch of the small files (a fixed permutation), read by 8 threads each
  taking the next file, as a loader's workers do. shuffle-order: the same, after publishing the
  order to the mount (`python/warmfs`'s `publish_order`, timed with the epoch; warmfs only). The
  origin limit is the same GETs in the same order with `curl -Z --parallel-max 64`, as many in
  flight as warmfs's fetch threads (with 8: `files_per_s_at_8`).
- records: the shards' 100 KiB `.bin` records (offsets from their tar headers), shuffled, read
  map-style (open, `pread` of the record, close) by 8 threads each taking the next.
  records-order: the same after publishing the order as (shard, offset, length) ranges
  (warmfs only). The origin limit is a range GET per record, same order, 64 in flight.
- windows: a memmap'd token dataset's access: window i of the 512 MiB token file is the
  32,772 bytes at i x 32,772 (8,192 tokens and the target, 4-byte ids), all 16,382 windows in
  one shuffled order, read by 8 threads that each keep the file open and `pread` the next
  window. windows-order: the same after publishing the order as (file, offset, length)
  ranges (warmfs only). The origin limit is a range GET per window, same order, 64 in flight.
- epochs: `warmfs plan s3://bench/token --epochs 3 --memory-cache-size 64M --cache-size 256M
  --json`, then a fresh warmfs mount with those sizes (the SSD tier half the dataset) and
  three epochs of the token file's 1 MiB windows (one chunk each: the plan's model, every
  chunk once per epoch), each a fresh shuffle published as the order first, 8 readers that
  drop each window from the page cache after reading it, so every epoch reaches warmfs. Per
  epoch the bytes pulled (`bucket_bytes_read`) and the local share, next to the plan's; the
  cell is the three epochs' seconds, the local shares and the plan's in brackets, and the
  section below the targets has the whole comparison (tools/lib/plan_runs.py, shared with
  tests/integration/test_plan.py).
- ls: `ls -lR` of `small/`; warmfs's LIST/HEAD/GET counts come from `warmfs stats --json`
  (L/H/G in the cell). The origin limit is a LIST-with-delimiter walk of the same tree.
- tar: Python's `tarfile` in stream mode over each shard in order, every member read, samples
  grouped by basename. The origin limit is the shards' bytes fetched by curl (no parsing).
  The Python workers run with glibc's heap trimming held off
  (`GLIBC_TUNABLES=glibc.malloc.trim_threshold=268435456`) so that per-sample allocations cost
  the same whatever file system is read; without it the local copy's row measured the
  allocator (a `brk` pair per sample), not the disk.
- ckpt: 512 MiB written in 8 MiB writes to `ckpt/NAME.tmp`, fsync (the figure), then close and
  rename to `ckpt/NAME`. Right after fsync a boto3 HEAD of the temp key (straight to s3rver)
  says whether it was durable at fsync; after the rename the final key is polled and its bytes
  compared by SHA-256. The origin figure is `aws s3 cp` of the same number of bytes through the
  proxy. Until warmfs writes land, warmfs mounts read-only and this row shows `error (EROFS)`;
  re-run it with `tools/bench/run --only ckpt --systems warmfs` (plus `--warmfs-arg=...` if a flag
  turns writes on).
- find: a fresh mount (empty caches, page cache dropped) and `find tree | wc -l` over a tree of
  100,000 objects of a few bytes (100 folders of 1,000, `tree/`), timed together: the mount is
  part of what a job pays (emptying the last cache dir before, and `warmfs stats` after, are
  not). warmfs's row "from the listing index" unmounts the cold mount and
  mounts again on its cache dir, whose listing index answers the walk (docs/ssd-cache.md). Its
  row "from a snapshot" mounts with `--snapshot` of a snapshot
  taken just before (`warmfs snapshot s3://bench`, its time is `snapshot_s` in the JSON line,
  not in the figure); the local limit is `find` on the local copy after dropping the page cache.
  L/H/G are warmfs's requests during the mount and the walk (docs/snapshots.md).
- RSS: the memory each daemon holds, sampled every 100 ms during each measurement (the max is kept): VmRSS, with the shared-memory pages it maps (RssShmem) replaced by the whole of its memory files (memfd), mapped or not.
- warmfs via a cache server (`served`): a mount with no cache dir of its own (its memory tier
  only) reading through a `warmfs serve` on loopback (SSD tier, 256M memory, token auth). The
  server starts with the run and keeps its SSD tier; before each workload, one unmeasured pass
  through a mount of its own warms it (the token file is read whole for rand). Its cold row
  is then a fresh mount, page cache dropped, whose reads the server answers: the shared tier
  of a node without a local SSD (docs/cache-server.md). Reads only (seq, par4, rand, small,
  tar), on the plain origin. Its fanout row: three such mounts, each reading its own 1 GiB
  object through the one server at once (warmed with the three just before), against one mount
  alone (its seq row).
- FUSE ceiling: `build/tools/fuse-ceiling/fuse-ceiling` serves files from its own memory with
  warmfs's mount options (max_read 1 MiB, read_ahead_kb 4096, max_background 64, clone_fd,
  multithreaded loop, keep_cache); its cold and page-cache-dropped rows are reads served by the
  daemon, its warm row is the page cache.

## How the systems are configured

- warmfs: `--path-style --memory-cache-size 2048M --cache-dir <fresh dir> --cache-size 16G`.
- s3fs-fuse: `-o url=http://127.0.0.1:PROXY,use_path_request_style,passwd_file=F,use_cache=DIR,`
  `parallel_count=8,multipart_size=64,multireq_max=16,norenameapi,max_stat_cache_size=100000,`
  `stat_cache_expire=60,enable_noobj_cache,kernel_cache,endpoint=us-east-1`
  (`norenameapi`: meant to keep s3fs from renaming by UploadPartCopy, which s3rver lacks;
  s3fs 1.90 still renames the 512 MiB checkpoint with a multipart copy, answered 501, so its
  checkpoint row is an error: `Input/output error at rename`).
- rclone mount (remote `type = s3, provider = Other, endpoint = http://127.0.0.1:PROXY`):
  `--vfs-cache-mode full --vfs-cache-max-size 20G --vfs-read-chunk-size 16M
  --vfs-read-chunk-size-limit off --buffer-size 32M --vfs-read-ahead 256M --transfers 8
  --checkers 8 --use-server-modtime --attr-timeout 60s --dir-cache-time 1h
  --s3-upload-concurrency 8 --s3-chunk-size 16M`. `--use-server-modtime` spares rclone a HEAD
  per file in `ls -l`; its writes go to the bucket after `--vfs-write-back` (5 s) and the upload.
- Each system's cache directory is wiped before each cold mount.

## Caveats

- The machine (2 cores) is shared with other engineers' builds and tests while the benchmark
  runs; s3rver, the proxy (one Python asyncio thread) and the filesystem daemon all compete for
  the same two cores. Absolute figures move from run to run; compare ratios within one run.
- This is not a test: there are no thresholds, and no figure here fails anything.
"""
