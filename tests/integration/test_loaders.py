"""The Python helper (python/, docs/loaders.md) with Debian's python3 and python3-torch: its own
tests; `pip install ./python` offline; and a real PyTorch DataLoader (four worker processes)
over a mount, whose OrderedSampler publishes each epoch's shuffled order: two epochs read
byte-exact, two orders published, each file fetched from the bucket once (the second epoch
comes from memory), and the epochs' numbers in the stats.

On s3rver. The loader runs in a subprocess of Debian's python3 (/usr/bin, from the harness's
PATH), which has torch.
"""

import hashlib
import json
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

import harness
from harness import KiB

S3RVER: harness.S3rver
PYTHON_DIR = harness.REPO / "python"
COUNT = 200
SIZE = 24 * KiB

LOADER = r"""
import hashlib, json, sys
import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler
from warmfs.torch import OrderedSampler

mnt, n, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
paths = [f"{mnt}/ds/s{i:04d}.bin" for i in range(n)]

class Files(Dataset):
    def __len__(self):
        return n
    def __getitem__(self, i):
        with open(paths[i], "rb") as f:
            return i, hashlib.sha256(f.read()).hexdigest()

g = torch.Generator()
g.manual_seed(5)
sampler = OrderedSampler(RandomSampler(range(n), generator=g), lambda i: paths[i], mnt)
loader = DataLoader(Files(), sampler=sampler, batch_size=16, num_workers=4, collate_fn=list)
out = [[item for batch in loader for item in batch] for _ in range(epochs)]
print(json.dumps({"epochs": out, "published": sampler.published}))
"""


def python3() -> str:
    p = shutil.which("python3", path=harness.BASE_PATH)
    if p is None:
        raise AssertionError("no python3 on " + harness.BASE_PATH)
    return p


def setUpModule():
    harness.require("warmfs", "fuse", "s3rver")
    global S3RVER
    S3RVER = harness.start_server(unittest.addModuleCleanup, harness.S3rver())


class Helper(harness.WarmfsTestCase):
    timeout = 180.0

    def run_py(self, args, env=None, timeout=120):
        env = env or {"PATH": harness.BASE_PATH, "LANG": "C.UTF-8", "HOME": tempfile.gettempdir()}
        return subprocess.run([python3(), *args], capture_output=True, text=True, env=env,
                              timeout=timeout, cwd=harness.REPO)

    def test_own_tests(self):
        env = {"PATH": harness.BASE_PATH, "LANG": "C.UTF-8", "PYTHONPATH": str(PYTHON_DIR),
               "HOME": tempfile.gettempdir()}
        run = self.run_py(["-m", "unittest", "discover", "-s", "python/tests"], env)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("OK", run.stderr)

    def test_pip_install_offline(self):
        target = harness.temp_dir(self.addCleanup, "warmfs-pip-")
        run = self.run_py(["-m", "pip", "install", "--no-index", "--no-cache-dir", "--target",
                           str(target), str(PYTHON_DIR)])
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        env = {"PATH": harness.BASE_PATH, "LANG": "C.UTF-8", "PYTHONPATH": str(target)}
        run = self.run_py(["-c", "import warmfs, warmfs.torch; print(warmfs.ORDER_HEADER)"], env)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.strip(), "warmfs-order 1")

    def test_dataloader_over_a_mount(self):
        c = S3RVER.client()
        harness.create_bucket(c, "loader")
        objects = {f"ds/s{i:04d}.bin": harness.make_data(SIZE, seed=i) for i in range(COUNT)}
        harness.put_many(c, "loader", objects)
        digests = {int(k[4:8]): hashlib.sha256(v).hexdigest() for k, v in objects.items()}
        m = self.mount(S3RVER, "s3://loader")
        env = dict(m.env, PYTHONPATH=str(PYTHON_DIR))
        run = self.run_py(["-c", LOADER, str(m.path), str(COUNT), "2"], env, timeout=150)
        self.assertEqual(run.returncode, 0, f"{run.stdout}\n{run.stderr}\n{m.log_tail()}")
        out = json.loads(run.stdout)
        self.assertEqual(out["published"], 2)
        orders = []
        for epoch in out["epochs"]:
            self.assertEqual(sorted(i for i, _ in epoch), list(range(COUNT)))
            for i, digest in epoch:
                self.assertEqual(digest, digests[i], f"sample {i}")
            orders.append([i for i, _ in epoch])
        self.assertNotEqual(orders[0], orders[1], "the sampler did not reshuffle")
        s = m.stats()
        self.assertEqual(s["order"]["orders"], 2, s["order"])
        self.assertEqual(s["order"]["read_entries"], 2 * COUNT, s["order"])
        self.assertEqual(s["bucket_requests"]["get"], COUNT, s)
        epochs = [e for e in s["epochs"] if e["kind"] == "order"]
        self.assertEqual([e["samples"] for e in epochs], [COUNT, COUNT], s["epochs"])
        self.assertEqual([e["bucket_gets"] for e in epochs], [COUNT, 0], s["epochs"])
        self.assertEqual(epochs[1]["bucket_bytes"], 0, epochs[1])


if __name__ == "__main__":
    unittest.main()
