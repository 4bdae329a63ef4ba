#!/usr/bin/python3
"""The benchmark chart: grouped horizontal bars of each system's ratio to its row's reference.

Run by Debian's /usr/bin/python3 (python3-matplotlib), not by the default python3:
  bench_chart.py DATA.json OUT.png
DATA: {"title": str, "rows": [{"label", "reference", "notes": {system: text}, "warmfs", "s3fs",
"rclone"}]}: ratios or null; a note is drawn beside the bar, or alone where there is none.
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SYSTEMS = [("warmfs", "#d95f02"), ("s3fs", "#7570b3"), ("rclone", "#1b9e77")]
REF_NAMES = {"origin": "origin", "local": "local warm", "ceiling": "FUSE ceiling"}


def main():
    data = json.load(open(sys.argv[1]))
    rows = data["rows"]
    n = len(rows)
    fig, ax = plt.subplots(figsize=(10, 0.55 * n + 1.6))
    height = 0.8 / len(SYSTEMS)
    ymax = 0
    for j, (name, color) in enumerate(SYSTEMS):
        ys, xs = [], []
        for i, r in enumerate(rows):
            if r.get(name) is not None:
                ys.append(n - 1 - i + (1 - j) * height)
                xs.append(r[name])
        if xs:
            ax.barh(ys, xs, height=height, color=color, label=name)
            for y, x, i in zip(ys, xs, [i for i, r in enumerate(rows) if r.get(name) is not None]):
                note = rows[i].get("notes", {}).get(name)
                ax.text(x * 1.04, y, f"{x:.2f}" + (f" ({note})" if note else ""), va="center", fontsize=7)
            ymax = max(ymax, max(xs))
        for i, r in enumerate(rows):  # no bar: say why (error, timeout, EROFS)
            note = r.get("notes", {}).get(name)
            if r.get(name) is None and note:
                ax.text(1.0, n - 1 - i + (1 - j) * height, f" {name}: {note}", va="center",
                        fontsize=7, color=color)
    ax.set_yticks(range(n))
    ax.set_yticklabels([f"{r['label']}  (vs {REF_NAMES.get(r['reference'], r['reference'])})"
                        for r in reversed(rows)], fontsize=8)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("ratio to the row's reference (log scale; higher is better)")
    ax.set_title(data["title"], fontsize=10)
    ax.set_xlim(left=min(0.01, min((r[s] for r in rows for s, _ in SYSTEMS if r.get(s)), default=1) * 0.8),
                right=max(2, ymax * 2))
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(axis="x", which="both", alpha=0.25)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
