"""The benchmark harness still works: `tools/bench/run --smoke` (tiny sizes, warmfs only), and its
cache-server system.

Not a performance test: no figure is checked, only that every workload and phase produced a
measurement, that each workload (the checkpoint too) ended `ok` (the harness itself exits 1
otherwise), and that the report was written.
"""

import json
import subprocess
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "build" / "bench-smoke"
EXPECTED = {"seq": 3, "par4": 3, "rand": 3, "small": 3, "shuffle": 1, "shuffle-order": 1, "ls": 2,
            "tar": 3, "records": 1, "records-order": 1, "windows": 1, "windows-order": 1,
            "epochs": 1, "ckpt": 1, "find": 3}


class BenchSmoke(unittest.TestCase):
    def test_smoke_run(self):
        harness.require("warmfs", "s3rver", "fuse")
        results = OUT / "results.jsonl"
        doc = OUT / "benchmarks.md"
        results.unlink(missing_ok=True)
        doc.unlink(missing_ok=True)
        try:
            run = subprocess.run([sys.executable, str(REPO / "tools" / "bench" / "run"), "--smoke"],
                                 cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=120)
        except subprocess.TimeoutExpired as e:
            self.fail(f"tools/bench/run --smoke took over 120 s\n{(e.stdout or b'')[-3000:]}")
        self.assertEqual(run.returncode, 0, f"stdout:\n{run.stdout[-4000:]}\nstderr:\n{run.stderr[-2000:]}")
        recs = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
        got: dict[str, int] = {}
        for r in recs:
            if r.get("type") == "measurement":
                self.assertEqual(r["system"], "warmfs")
                got[r["workload"]] = got.get(r["workload"], 0) + 1
                self.assertEqual(r["status"], "ok", r)
                self.assertGreater(r["value"], 0, r)
        self.assertEqual(got, EXPECTED)
        self.assertIn("| workload | phase |", doc.read_text())

    def test_smoke_served(self):
        """The cache-server system: a mount with no cache dir of its own reading through a
        `warmfs serve` the harness warmed, and three such mounts at once."""
        harness.require("warmfs", "s3rver", "fuse")
        out = OUT / "served"
        out.mkdir(parents=True, exist_ok=True)
        results = out / "results.jsonl"
        results.unlink(missing_ok=True)
        try:
            run = subprocess.run([sys.executable, str(REPO / "tools" / "bench" / "run"), "--smoke",
                                  "--only", "seq,rand,fanout", "--systems", "served",
                                  "--results", str(results), "--doc", str(out / "benchmarks.md")],
                                 cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=120)
        except subprocess.TimeoutExpired as e:
            self.fail(f"tools/bench/run --smoke --systems served took over 120 s\n"
                      f"{(e.stdout or b'')[-3000:]}")
        self.assertEqual(run.returncode, 0, f"stdout:\n{run.stdout[-4000:]}\nstderr:\n{run.stderr[-2000:]}")
        recs = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
        got = {}
        for r in recs:
            if r.get("type") != "measurement":
                continue
            self.assertEqual(r["system"], "served")
            self.assertEqual(r["status"], "ok", r)
            self.assertGreater(r["value"], 0, r)
            got[(r["workload"], r["phase"])] = r
        self.assertEqual(sorted(got), [("fanout", "cold"), ("rand", "cold"), ("rand", "warm"),
                                       ("rand", "warm-dropped"), ("seq", "cold"), ("seq", "warm"),
                                       ("seq", "warm-dropped")])
        # The server was warmed first: the measured mount read nothing from the bucket.
        for key in (("seq", "cold"), ("rand", "cold")):
            self.assertEqual(got[key]["warmfs_bucket_bytes_read"], 0, got[key])
            self.assertEqual(got[key]["warmfs_requests"]["get"], 0, got[key])


if __name__ == "__main__":
    unittest.main()
