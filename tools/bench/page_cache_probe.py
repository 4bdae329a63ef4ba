#!/usr/bin/env python3
"""How a file sits in the kernel's page cache: which pages are resident, and in what folios.

    python3 tools/bench/page_cache_probe.py FILE [FILE ...] [--mib N] [--read-first]

For each FILE (with --read-first: after dropping its cached pages and reading it whole with
1 MiB read() calls, as the benchmark's readers do), reports how many of its pages are resident
(mincore, without reading them), then maps the first N MiB (default 256), touches each page,
and looks every page up in /proc/kpageflags (root only): a page is either a small folio of its
own, or the head or a tail of a large one. A local ext4 file on kernel 6.18 sits mostly in
large folios; a FUSE file, whatever the filesystem behind it, in 4 KiB pages
(docs/benchmark-misses.md, "Warm sequential from the page cache"). Touching the pages reads
any that are not resident, through the file's filesystem, like any reader would.
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import os
import struct
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")
KPF_COMPOUND_HEAD = 1 << 15
KPF_COMPOUND_TAIL = 1 << 16
PFN_MASK = (1 << 55) - 1

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
MAP_FAILED = ctypes.c_void_p(-1).value


def probe(path: str, mib: int, read_first: bool) -> str:
    fd = os.open(path, os.O_RDONLY)
    try:
        if read_first:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # start from nothing cached
            while os.read(fd, 1 << 20):
                pass
        size = os.fstat(fd).st_size
        if size == 0:
            return f"{path}: empty"
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, MAP_FAILED):
            raise OSError(ctypes.get_errno(), f"mmap {path}")
        try:
            pages = (size + PAGE - 1) // PAGE
            vec = ctypes.create_string_buffer(pages)
            if libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore {path}")
            resident = sum(b & 1 for b in vec.raw)
            holes, inside = 0, False
            for b in vec.raw:
                missing = not (b & 1)
                holes += missing and not inside
                inside = missing
            line = f"{path}: {resident:,} of {pages:,} pages resident, {holes} hole(s)"
            try:
                kpf = open("/proc/kpageflags", "rb")
                pagemap = open("/proc/self/pagemap", "rb")
            except PermissionError:
                return line + "; folio sizes need root"
            span = min(pages, (mib << 20) // PAGE)
            heads = tails = small = 0
            with kpf, pagemap:
                for i in range(span):
                    ctypes.string_at(addr + i * PAGE, 1)  # fault the page in
                    pagemap.seek((addr // PAGE + i) * 8)
                    pfn = struct.unpack("<Q", pagemap.read(8))[0] & PFN_MASK
                    kpf.seek(pfn * 8)
                    flags = struct.unpack("<Q", kpf.read(8))[0]
                    if flags & KPF_COMPOUND_HEAD:
                        heads += 1
                    elif flags & KPF_COMPOUND_TAIL:
                        tails += 1
                    else:
                        small += 1
            folios = heads + small
            return (line + f"; first {span * PAGE >> 20} MiB: {folios:,} folios "
                    f"({heads:,} large, {small:,} single pages), "
                    f"{span * PAGE / max(folios, 1) / 1024:.0f} KiB per folio on average")
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--mib", type=int, default=256, help="how much of each file to look at")
    ap.add_argument("--read-first", action="store_true",
                    help="drop each file's cached pages, then read it whole with 1 MiB read() calls")
    a = ap.parse_args()
    rc = 0
    for f in a.files:
        try:
            print(probe(f, a.mib, a.read_first), flush=True)
        except OSError as e:
            print(f"page_cache_probe: {f}: {e.strerror or e}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
