"""`warmfs plan`'s per-epoch predictions against epochs measured through a mount.

Shared by tests/integration/test_plan.py (a small dataset, checked) and tools/bench/run's
`epochs` workload (a dataset twice the SSD tier, reported): which of the plan's scenarios a
single mount is, what one measured epoch is (from two `warmfs stats --json` snapshots), the
tolerances the test holds the plan to, and the comparison as text.

Tolerances: per epoch, the bytes pulled from the bucket within 15% of the plan's (8 MiB at
least, one reader's worth of chunks in flight), and the share of reads served locally within
0.08; the epoch's time within a factor of 2 (the machine is shared and noisy). The plan's hit
ratio is its median replay; a measured share below it but not below its worst replay (minus
0.08) is what the plan warns of (one chunk's inflated sketch estimate can evict a region of a
tier of few regions), and counts as `worst` rather than `off`.
"""

from __future__ import annotations

MiB = 1 << 20
BYTES_TOLERANCE = 0.15
HIT_TOLERANCE = 0.08
TIME_FACTOR = 2.0


def node_cache_epochs(plan: dict) -> list[dict]:
    """The per-epoch predictions of one mount with its own caches (`plan --json`'s node-cache
    scenario): dicts with epoch, seconds, bucket_bytes, hit_ratio {local, worst, ...}."""
    return next(s for s in plan["scenarios"] if s["name"] == "node-cache")["epochs"]


def measured_epoch(epoch: int, seconds: float, dataset_bytes: int, before: dict,
                   after: dict) -> dict:
    """One epoch from the mount's stats before and after it: bytes pulled from the bucket, and
    the share of the dataset that did not come from it (the plan's `local`)."""
    pulled = after["bucket_bytes_read"] - before["bucket_bytes_read"]
    ra_before, ra_after = before.get("readahead", {}), after.get("readahead", {})
    return {"epoch": epoch, "seconds": seconds, "bucket_bytes": pulled,
            "local": 1 - pulled / dataset_bytes,
            "disk_hit_bytes": after["disk_hit_bytes"] - before["disk_hit_bytes"],
            "memory_hit_bytes": after.get("memory_hit_bytes", 0) - before.get("memory_hit_bytes", 0),
            # What read-ahead fetched, and what of it was dropped unread: bytes pulled that no
            # read asked for, which the plan's model (every chunk read once) does not count.
            **{k: ra_after.get(k, 0) - ra_before.get(k, 0)
               for k in ("prefetched_chunks", "wasted_chunks")}}


def judge(predicted: dict, measured: dict) -> tuple[str, list[str]]:
    """("ok" | "worst" | "off", what is outside the tolerances). `worst`: the measured local
    share is below the plan's median replay but not below its worst one."""
    hit = predicted["hit_ratio"]
    if hit["worst"] - HIT_TOLERANCE <= measured["local"] < hit["local"] - HIT_TOLERANCE:
        return "worst", []
    off = []
    allowed = max(BYTES_TOLERANCE * predicted["bucket_bytes"], 8 * MiB)
    if abs(measured["bucket_bytes"] - predicted["bucket_bytes"]) > allowed:
        off.append(f"bytes {measured['bucket_bytes'] / MiB:.1f} MiB, plan "
                   f"{predicted['bucket_bytes'] / MiB:.1f} MiB (+/- {allowed / MiB:.1f})")
    if abs(measured["local"] - hit["local"]) > HIT_TOLERANCE:
        off.append(f"local {measured['local']:.2f}, plan {hit['local']:.2f} (+/- {HIT_TOLERANCE})")
    if not predicted["seconds"] / TIME_FACTOR <= measured["seconds"] <= TIME_FACTOR * predicted["seconds"]:
        off.append(f"time {measured['seconds']:.2f} s, plan {predicted['seconds']:.2f} s "
                   f"(within {TIME_FACTOR:g}x)")
    return ("off" if off else "ok"), off


def comparison_lines(predicted: list[dict], measured: list[dict]) -> list[str]:
    """One line per epoch: the plan's seconds, MiB and local share (worst replay) and the run's."""
    return [f"epoch {p['epoch']}: predicted {p['seconds']:.2f} s, "
            f"{p['bucket_bytes'] / MiB:.1f} MiB, local {p['hit_ratio']['local']:.2f} (worst "
            f"{p['hit_ratio']['worst']:.2f}); measured "
            f"{x['seconds']:.2f} s, {x['bucket_bytes'] / MiB:.1f} MiB, local {x['local']:.2f} "
            f"(disk hits {x['disk_hit_bytes'] / MiB:.1f} MiB)"
            for p, x in zip(predicted, measured)]
