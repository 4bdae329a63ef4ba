"""The model test's operations through a real mount: random create, open, pwrite, append, read,
ftruncate, truncate, fsync, close, mkdir, rmdir, unlink and rename (of files and directories),
run on a warmfs mount (moto, authentication on) and on a local temp dir side by side. Each step
must give the same errno on both, reads the same bytes, and every 25 steps and at the end the
two trees must list the same names, types, sizes and bytes; after every fsync or close that
returned 0 the bucket (boto3) holds the file's bytes. The generator is a Python port of
tests/unit/fs/model_fs.h (the same operation mix, smaller files); it is seeded:
WARMFS_MODEL_SEED picks the seed (printed on failure), WARMFS_MODEL_OPS the operations (1500).
"""

from __future__ import annotations

import errno
import os
import random
import unittest
from pathlib import Path

import harness

MOTO: harness.MotoServer
BUCKET = "model"
NAMES = ["a", "b", "c", "d", "ckpt", "ckpt.tmp", "x", "y"]


def setUpModule():
    harness.require("warmfs", "fuse", "moto")
    global MOTO
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    harness.create_bucket(MOTO.client(), BUCKET)


def run(fn) -> tuple[int, object]:
    try:
        return 0, fn()
    except OSError as e:
        return e.errno, None


class Model(harness.WarmfsTestCase):
    timeout = 900.0

    def test_random_operations_match_a_local_directory(self):
        seed = int(os.environ.get("WARMFS_MODEL_SEED", "1"))
        ops = int(os.environ.get("WARMFS_MODEL_OPS", "1500"))
        m = self.mount(MOTO, f"s3://{BUCKET}/t{seed}")
        shadow = harness.temp_dir(self.addCleanup, "warmfs-model-shadow-")
        rng = random.Random(seed)
        roots = {"m": m.path, "s": shadow}
        handles: list[dict] = []  # {"m": fd, "s": fd, "path": str, "access": int}
        self.addCleanup(lambda: [os.close(fd) for h in handles for fd in (h["m"], h["s"])])
        log: list[str] = []
        s3 = MOTO.client()

        def fail(msg: str):
            self.fail(f"model test through a mount: seed {seed}, step {len(log)}: {msg}\n"
                      + "\n".join(log[-60:]) + "\n" + m.log_tail())

        def tree(root: Path) -> dict[str, tuple]:
            out = {}
            for dirpath, dirs, files in os.walk(root):
                for d in dirs:
                    out[os.path.relpath(os.path.join(dirpath, d), root)] = ("d",)
                for f in files:
                    p = os.path.join(dirpath, f)
                    out[os.path.relpath(p, root)] = ("f", os.stat(p).st_size)
            return out

        def existing(kind: str | None = None) -> str:
            t = [p for p, v in tree(shadow).items() if kind is None or v[0] == kind]
            return rng.choice(t) if t and rng.random() < 0.8 else random_path()

        def random_path() -> str:
            return "/".join(rng.choice(NAMES) for _ in range(rng.randint(1, 3)))

        def new_path() -> str:
            dirs = [""] + [p for p, v in tree(shadow).items() if v[0] == "d" and p.count("/") < 2]
            d = rng.choice(dirs)
            return (d + "/" if d else "") + rng.choice(NAMES)

        def bucket_bytes(rel: str) -> bytes | None:
            try:
                return s3.get_object(Bucket=BUCKET, Key=f"t{seed}/{rel}")["Body"].read()
            except s3.exceptions.NoSuchKey:
                return None

        def both(fn):
            em, rm = run(lambda: fn("m"))
            es, rs = run(lambda: fn("s"))
            if em != es:
                fail(f"errno {errno.errorcode.get(em, em)} through the mount, "
                     f"{errno.errorcode.get(es, es)} locally")
            return em, rm, rs

        for step in range(ops):
            dice = rng.randrange(1000)
            if dice < 120 or (not handles and dice < 500):
                path = new_path() if rng.random() < 0.7 else existing("f")
                access = rng.choice([os.O_RDONLY, os.O_WRONLY, os.O_RDWR, os.O_RDWR])
                flags = access | (os.O_CREAT if rng.random() < 0.75 else 0)
                if flags & os.O_CREAT and rng.random() < 0.25:
                    flags |= os.O_EXCL
                if access != os.O_RDONLY and rng.random() < 0.2:
                    flags |= os.O_TRUNC
                log.append(f"open {path} flags={flags:#o}")
                e, fm, fs = both(lambda r: os.open(roots[r] / path, flags, 0o644))
                if e == 0:
                    handles.append({"m": fm, "s": fs, "path": path, "access": access})
                continue
            if not handles and dice < 700:
                path = new_path()
                log.append(f"mkdir {path}")
                both(lambda r: os.mkdir(roots[r] / path))
                continue
            if not handles:
                continue
            h = handles[rng.randrange(len(handles))]
            if dice < 430:
                off = rng.randrange(0, 200_000) if dice < 380 else None
                data = rng.randbytes(rng.randint(1, 40_000 if off is not None else 10_000))
                log.append(f"write {h['path']} off={off} len={len(data)}")

                def write(r):
                    o = off if off is not None else os.fstat(h[r]).st_size
                    return os.pwrite(h[r], data, o)
                e, nm, ns = both(write)
                if e == 0 and nm != ns:
                    fail(f"pwrite wrote {nm} bytes through the mount, {ns} locally")
            elif dice < 530:
                off, n = rng.randrange(0, 200_000), rng.randint(1, 80_000)
                log.append(f"read {h['path']} off={off} len={n}")
                e, bm, bs = both(lambda r: os.pread(h[r], n, off))
                if e == 0 and bm != bs:
                    fail(f"pread returned {len(bm)} bytes through the mount that differ from "
                         f"the {len(bs)} read locally")
            elif dice < 560:
                size = rng.randrange(0, 200_000)
                log.append(f"ftruncate {h['path']} {size}")
                both(lambda r: os.ftruncate(h[r], size))
            elif dice < 580:
                path, size = existing("f"), rng.randrange(0, 200_000)
                log.append(f"truncate {path} {size}")
                both(lambda r: os.truncate(roots[r] / path, size))
            elif dice < 750:
                close = dice >= 660
                log.append(f"{'close' if close else 'fsync'} {h['path']}")
                if close:
                    handles.remove(h)
                local = shadow / h["path"]
                # The file the handle writes still has the name it is tracked under (not
                # unlinked or replaced), and no other handle writes it.
                same = local.is_file() and os.stat(local).st_ino == os.fstat(h["s"]).st_ino \
                    and not any(o["path"] == h["path"] and o["access"] != os.O_RDONLY
                                for o in handles if o is not h)
                e, _, _ = both(lambda r: os.close(h[r]) if close else os.fsync(h[r]))
                if e == 0 and h["access"] != os.O_RDONLY and same:
                    # fsync/close returned 0: the bucket holds the bytes.
                    if bucket_bytes(h["path"]) != local.read_bytes():
                        fail(f"{'close' if close else 'fsync'} returned 0 and the bucket's "
                             f"{h['path']} differs from the file")
            elif dice < 830:
                path = new_path()
                log.append(f"mkdir {path}")
                both(lambda r: os.mkdir(roots[r] / path))
            elif dice < 860:
                path = existing("d")
                log.append(f"rmdir {path}")
                both(lambda r: os.rmdir(roots[r] / path))
            elif dice < 900:
                path = existing()
                log.append(f"unlink {path}")
                both(lambda r: os.unlink(roots[r] / path))
            else:
                src = existing()
                dst = existing() if rng.random() < 0.33 else new_path()
                log.append(f"rename {src} {dst}")
                e, _, _ = both(lambda r: os.rename(roots[r] / src, roots[r] / dst))
                if e == 0:
                    for o in handles:
                        if o["path"] == src or o["path"].startswith(src + "/"):
                            o["path"] = dst + o["path"][len(src):]
            if step % 25 == 0 or step == ops - 1:
                tm, ts = tree(m.path), tree(shadow)
                if tm != ts:
                    diff = sorted(set(tm.items()) ^ set(ts.items()))[:10]
                    fail(f"the trees differ (mount ^ local): {diff}")
                for p, v in ts.items():
                    if v[0] == "f" and (m.path / p).read_bytes() != (shadow / p).read_bytes():
                        fail(f"{p}: bytes differ")
        for h in handles:
            for r in ("m", "s"):
                os.close(h[r])
        handles.clear()
        for p, v in tree(shadow).items():
            if v[0] == "f" and bucket_bytes(p) != (shadow / p).read_bytes():
                fail(f"after closing every file, the bucket's {p} differs from the local file")
        print(f"model test through a mount: seed {seed}, {ops} operations", flush=True)


if __name__ == "__main__":
    unittest.main()
