"""The warmfs Python helper without a mount: a stand-in mount is a directory holding a plain
file .warmfs/order, which publish_order writes as it would the control file. The real mount
and DataLoader are tests/integration/test_loaders.py. Run with Debian's python3 (it has torch):
    python3 -m unittest discover -s python/tests
"""

import json
import os
import random
import struct
import tempfile
import unittest
from pathlib import Path

import warmfs


def stand_in_mount(tmp: Path) -> Path:
    root = tmp / "mnt"
    (root / ".warmfs").mkdir(parents=True)
    (root / ".warmfs" / "order").write_text("")
    return root


class Orders(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="warmfs-py-"))
        self.addCleanup(lambda: __import__("shutil").rmtree(self.tmp, ignore_errors=True))
        self.mnt = stand_in_mount(self.tmp)

    def test_format_and_escapes(self):
        text = warmfs.format_order(["a/b.jpg", ("s/x y.tar", 1024, 100), "p%q\tr"])
        self.assertEqual(text, "warmfs-order 1\na/b.jpg\ns/x%20y.tar 1024 100\np%25q%09r\n")
        with self.assertRaises(ValueError):
            warmfs.format_order([("a", 0, 0)])
        with self.assertRaises(ValueError):
            warmfs.format_order(["/abs/path"])

    def test_publish_relative_and_absolute_paths(self):
        (self.mnt / "data").mkdir()
        n = warmfs.publish_order(self.mnt / "data", [self.mnt / "data" / "f1", "data/f2",
                                                      (str(self.mnt / "s.tar"), 5, 6)])
        self.assertEqual(n, 3)
        self.assertEqual((self.mnt / ".warmfs" / "order").read_text(),
                         "warmfs-order 1\ndata/f1\ndata/f2\ns.tar 5 6\n")
        with self.assertRaises(ValueError):
            warmfs.publish_order(self.mnt, [self.tmp / "outside"])

    def test_find_mount(self):
        (self.mnt / "a" / "b").mkdir(parents=True)
        self.assertEqual(warmfs.find_mount(self.mnt / "a" / "b"), self.mnt)
        with self.assertRaises(FileNotFoundError):
            warmfs.find_mount(self.tmp)

    def test_interleave(self):
        self.assertEqual(warmfs.interleave([1, 2, 3], ["a"], [10, 20]), [1, "a", 10, 2, 20, 3])
        self.assertEqual(warmfs.interleave(), [])


class Shards(unittest.TestCase):
    def test_expand(self):
        self.assertEqual(warmfs.expand_shards("t-{000..002}.tar"),
                         ["t-000.tar", "t-001.tar", "t-002.tar"])
        self.assertEqual(warmfs.expand_shards("{1..2}/x{8..10}"),
                         ["1/x8", "1/x9", "1/x10", "2/x8", "2/x9", "2/x10"])
        self.assertEqual(warmfs.expand_shards("plain.tar"), ["plain.tar"])

    def test_shard_order_is_the_seeded_shuffle(self):
        spec = "s/shard-{0000..0099}.tar"
        a = warmfs.shard_order(spec, seed=7, epoch=3)
        b = warmfs.shard_order(spec, seed=7, epoch=3)
        c = warmfs.shard_order(spec, seed=7, epoch=4)
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        self.assertEqual(sorted(a), warmfs.expand_shards(spec))
        expect = warmfs.expand_shards(spec)
        random.Random(10).shuffle(expect)
        self.assertEqual(a, expect)
        self.assertEqual(warmfs.shard_order(["b", "a"], shuffle=False), ["b", "a"])


def write_mds(root: Path, shards: list) -> list:
    """An MDS dataset as MosaicML Streaming's MDSWriter lays it out: index.json, and per
    shard a uint32 sample count, n + 1 uint32 offsets from the file's start, a config, then
    the samples. Returns the samples' bytes in global order."""
    index = {"version": 2, "shards": []}
    samples = []
    for k, sizes in enumerate(shards):
        data = [bytes([k, i]) * (s // 2) for i, s in enumerate(sizes)]
        config = b'{"cfg": 1}'
        n = len(data)
        start = 4 + 4 * (n + 1) + len(config)
        offsets = [start]
        for d in data:
            offsets.append(offsets[-1] + len(d))
        body = struct.pack(f"<I{n + 1}I", n, *offsets) + config + b"".join(data)
        name = f"shard.{k:05d}.mds"
        (root / name).write_bytes(body)
        index["shards"].append({"format": "mds", "compression": None, "zip_data": None,
                                "samples": n, "raw_data": {"basename": name, "bytes": len(body)}})
        samples.extend(data)
    (root / "index.json").write_text(json.dumps(index))
    return samples


class Mds(unittest.TestCase):
    def test_sample_ranges(self):
        tmp = Path(tempfile.mkdtemp(prefix="warmfs-mds-"))
        samples = write_mds(tmp, [[10, 20, 30], [40], [50, 60]])
        order = [5, 0, 3, 2, 4, 1]
        ranges = warmfs.mds_sample_ranges(tmp, order)
        self.assertEqual(len(ranges), len(order))
        for sid, (path, off, length) in zip(order, ranges):
            with open(path, "rb") as f:
                f.seek(off)
                self.assertEqual(f.read(length), samples[sid], (sid, path, off, length))
        with self.assertRaises(IndexError):
            warmfs.mds_sample_ranges(tmp, [6])


class Sampler(unittest.TestCase):
    def test_ordered_sampler_publishes_each_epoch(self):
        import torch
        from torch.utils.data import BatchSampler, DataLoader, RandomSampler

        from warmfs.torch import OrderedSampler

        tmp = Path(tempfile.mkdtemp(prefix="warmfs-torch-"))
        mnt = stand_in_mount(tmp)
        data = list(range(40))
        g = torch.Generator()
        g.manual_seed(1)
        s = OrderedSampler(RandomSampler(data, generator=g), lambda i: f"d/{i:03d}", mnt)
        loader = DataLoader(data, sampler=s, batch_size=8)
        for epoch in range(2):
            seen = [int(x) for batch in loader for x in batch]
            lines = (mnt / ".warmfs" / "order").read_text().splitlines()
            self.assertEqual(lines[0], "warmfs-order 1")
            self.assertEqual(lines[1:], [f"d/{i:03d}" for i in seen], f"epoch {epoch}")
            self.assertEqual(sorted(seen), data)
        self.assertEqual(s.published, 2)
        # A batch sampler's batches are flattened; ranges are passed through.
        b = OrderedSampler(BatchSampler(range(6), 4, False), lambda i: ("t.tar", i * 10, 10), mnt)
        self.assertEqual(list(b), [[0, 1, 2, 3], [4, 5]])
        lines = (mnt / ".warmfs" / "order").read_text().splitlines()
        self.assertEqual(lines[1:], [f"t.tar {i * 10} 10" for i in range(6)])

    def test_publish_failure(self):
        from warmfs.torch import OrderedSampler

        tmp = Path(tempfile.mkdtemp(prefix="warmfs-torch-"))
        mnt = stand_in_mount(tmp)
        s = OrderedSampler(range(3), lambda i: f"f{i}", mnt)
        os.remove(mnt / ".warmfs" / "order")
        (mnt / ".warmfs" / "order").mkdir()  # opening it for writing now fails
        with self.assertRaises(OSError):
            list(s)
        errors = []
        lax = OrderedSampler(range(3), lambda i: f"f{i}", mnt, strict=False,
                             on_error=errors.append)
        self.assertEqual(list(lax), [0, 1, 2])
        self.assertEqual(len(errors), 1)


if __name__ == "__main__":
    unittest.main()
