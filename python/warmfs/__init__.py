"""Publish the order of a training epoch to a warmfs mount (docs/loaders.md).

A warmfs mount prefetches in the order a loader announces by writing it to the control file
MOUNT/.warmfs/order (format "warmfs-order 1"). An order is a list of entries, each a file (a
path) or a range of one (a (path, offset, length) tuple), in the order the loader will read
them. Paths may be absolute (inside the mount) or relative to the mount's root.

Standard library only. warmfs.torch has the PyTorch sampler wrapper.
"""

from __future__ import annotations

import bisect
import errno
import json
import os
import random
import re
import struct
from pathlib import Path
from typing import Iterable, Sequence, Tuple, Union

__all__ = [
    "ORDER_HEADER", "Entry", "escape_path", "format_order", "find_mount", "publish_order",
    "interleave", "expand_shards", "shard_order", "mds_sample_ranges",
]

ORDER_HEADER = "warmfs-order 1"
CONTROL_FILE = (".warmfs", "order")

# A file, or a range of one: (path, offset, length).
Entry = Union[str, os.PathLike, Tuple[Union[str, os.PathLike], int, int]]


def escape_path(path: str) -> str:
    """A path as an order file writes it: '%', whitespace and control characters as %XX."""
    return "".join(f"%{ord(c):02X}" if c == "%" or ord(c) <= 0x20 or ord(c) == 0x7F else c
                   for c in path)


def find_mount(path: Union[str, os.PathLike]) -> Path:
    """The root of the warmfs mount that holds path: the nearest directory at or above it
    that serves .warmfs/order. FileNotFoundError when there is none."""
    p = Path(os.path.abspath(path))
    for d in [p, *p.parents]:
        if d.joinpath(*CONTROL_FILE).exists():
            return d
        if os.path.ismount(d):
            break
    raise FileNotFoundError(f"{path} is not inside a warmfs mount (no .warmfs/order above it)")


def _relative(mount: Path, path: Union[str, os.PathLike]) -> str:
    p = os.fspath(path)
    if os.path.isabs(p):
        rel = os.path.relpath(os.path.normpath(p), mount)
        if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir:
            raise ValueError(f"{p} is not inside the mount {mount}")
        p = rel
    return p.replace(os.sep, "/")


def format_order(entries: Iterable[Entry], mount: Union[str, os.PathLike, None] = None) -> str:
    """The text of an order file. With mount, absolute paths are made relative to it."""
    root = Path(mount) if mount is not None else None
    lines = [ORDER_HEADER]
    for e in entries:
        if isinstance(e, tuple):
            path, offset, length = e
            if int(offset) < 0 or int(length) <= 0:
                raise ValueError(f"bad range {e!r}: offset >= 0 and length > 0")
            rest = f" {int(offset)} {int(length)}"
        else:
            path, rest = e, ""
        rel = _relative(root, path) if root is not None else os.fspath(path)
        if os.path.isabs(rel):
            raise ValueError(f"{rel}: an absolute path needs the mount (find_mount)")
        lines.append(escape_path(rel) + rest)
    return "\n".join(lines) + "\n"


def publish_order(mount: Union[str, os.PathLike], entries: Iterable[Entry]) -> int:
    """Makes entries the order the mount prefetches in (replacing the one before) and returns
    how many there are. mount is the mount's root, or any path inside it. Returns at once:
    the mount fetches in the background. OSError if the mount refuses it (EINVAL: a bad
    entry, see the mount's log). A mount the kernel holds read-only takes it through the
    order file's ioctl channel."""
    root = find_mount(mount)
    entries = list(entries)
    text = format_order(entries, root)
    control = root.joinpath(*CONTROL_FILE)
    try:
        # One open, write, close: the mount takes the order at close.
        with open(control, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
    except OSError as e:
        if e.errno != errno.EROFS:
            raise
        _publish_by_ioctl(control, text.encode("utf-8", "surrogateescape"))
    return len(entries)


# The ioctl channel of a mount held read-only by the kernel (include/warmfs/control_ioctl.h).
_ORDER_CHUNK_BYTES = 16376
_IOC_ORDER_APPEND = (1 << 30) | ((4 + _ORDER_CHUNK_BYTES) << 16) | (ord("W") << 8) | 1
_IOC_ORDER_PUBLISH = (ord("W") << 8) | 2


def _publish_by_ioctl(control: Path, data: bytes) -> None:
    import fcntl
    fd = os.open(control, os.O_RDONLY | os.O_CLOEXEC)
    try:
        for off in range(0, len(data), _ORDER_CHUNK_BYTES):
            piece = data[off:off + _ORDER_CHUNK_BYTES]
            # A mutable buffer: fcntl copies immutable ones through 1 KiB at most.
            chunk = bytearray(struct.pack("=I", len(piece)) + piece.ljust(_ORDER_CHUNK_BYTES, b"\0"))
            fcntl.ioctl(fd, _IOC_ORDER_APPEND, chunk)
        fcntl.ioctl(fd, _IOC_ORDER_PUBLISH)
    finally:
        os.close(fd)


def interleave(*orders: Sequence[Entry]) -> list:
    """One order from several loaders sharing a mount (ranks or processes of one node),
    taking an entry of each in turn, as they read in parallel."""
    out = []
    for i in range(max((len(o) for o in orders), default=0)):
        out.extend(o[i] for o in orders if i < len(o))
    return out


_BRACES = re.compile(r"\{(\d+)\.\.(\d+)\}")


def expand_shards(spec: str) -> list[str]:
    """A WebDataset-style shard spec ("train-{000000..000099}.tar", several brace ranges
    allowed, zero padding kept) expanded to its list of paths."""
    m = _BRACES.search(spec)
    if m is None:
        return [spec]
    lo, hi = m.group(1), m.group(2)
    width = len(lo) if lo.startswith("0") or len(lo) == len(hi) else 0
    out = []
    for i in range(int(lo), int(hi) + 1):
        out.extend(expand_shards(spec[:m.start()] + str(i).zfill(width) + spec[m.end():]))
    return out


def shard_order(shards: Union[str, Sequence[str]], seed: int = 0, epoch: int = 0,
                shuffle: bool = True) -> list[str]:
    """The shards of an epoch in the order to read them: a spec (expand_shards) or a list,
    shuffled with Random(seed + epoch). Publish it, and give the same list to the loader with
    its own shard shuffling off (WebDataset(urls, shardshuffle=False)), so both agree."""
    urls = expand_shards(shards) if isinstance(shards, str) else list(shards)
    if shuffle:
        random.Random(seed + epoch).shuffle(urls)
    return urls


def mds_sample_ranges(root: Union[str, os.PathLike], sample_ids: Iterable[int],
                      index_file: str = "index.json") -> list:
    """(path, offset, length) of each sample of a MosaicML Streaming (MDS) dataset, in the
    order given: sample_ids are the dataset's global sample indices (as StreamingDataset's
    __getitem__ takes them) in the order the loader reads them. root is the directory holding
    index.json (the dataset's `local`, on the mount). Reads index.json and the header of each
    shard used (a few bytes); compressed shards are given whole (their path)."""
    root = Path(root)
    index = json.loads((root / index_file).read_text())
    shards = index["shards"]
    starts, total = [], 0
    for s in shards:
        starts.append(total)
        total += int(s["samples"])
    offsets: dict[int, tuple] = {}
    out = []
    for sid in sample_ids:
        sid = int(sid)
        if not 0 <= sid < total:
            raise IndexError(f"sample {sid} is not in the dataset ({total} samples)")
        k = bisect.bisect_right(starts, sid) - 1
        shard = shards[k]
        if shard.get("zip_data") and shard.get("compression"):
            out.append(str(root / shard["zip_data"]["basename"]))
            continue
        path = root / shard["raw_data"]["basename"]
        if k not in offsets:
            n = int(shard["samples"])
            with open(path, "rb") as f:
                head = f.read(4 + 4 * (n + 1))
            if len(head) < 4 + 4 * (n + 1) or struct.unpack_from("<I", head)[0] != n:
                raise ValueError(f"{path}: not an MDS shard of {n} samples")
            offsets[k] = struct.unpack_from(f"<{n + 1}I", head, 4)
        table = offsets[k]
        i = sid - starts[k]
        out.append((str(path), table[i], table[i + 1] - table[i]))
    return out
