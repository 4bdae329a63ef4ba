#!/usr/bin/env python3
"""Two shuffled epochs of 2,000 files of 64 KiB through a fresh warmfs mount (s3rver, no
added latency, --memory-cache-size 512M), read by 8 threads each taking the next file, each
epoch's order published first with python/warmfs; prints `warmfs stats --epochs` (the table
in docs/loaders.md). Needs root (FUSE) and build/ built: python3 tools/bench/order_epochs.py
"""
import random
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "lib"))
sys.path.insert(0, str(REPO / "python"))
import warmfs_harness as harness  # noqa: E402
import warmfs  # noqa: E402

FILES, SIZE, THREADS, EPOCHS = 2000, 64 * 1024, 8, 2


def read_epoch(root: Path, order: list) -> None:
    it, lock = iter(order), threading.Lock()

    def reader():
        while True:
            with lock:
                name = next(it, None)
            if name is None:
                return
            (root / name).read_bytes()

    threads = [threading.Thread(target=reader) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def main() -> int:
    server = harness.S3rver().start()
    try:
        client = server.client()
        harness.create_bucket(client, "epochs")
        objects = {f"train/{i:05d}.bin": harness.make_data(SIZE, i) for i in range(FILES)}
        harness.put_many(client, "epochs", objects)
        m = harness.Mount(server, "s3://epochs", args=["--memory-cache-size", "512M"])
        try:
            m.start()
            for epoch in range(EPOCHS):
                order = sorted(objects)
                random.Random(epoch).shuffle(order)
                warmfs.publish_order(m.path, order)
                read_epoch(m.path, order)
            # An order epoch ends at its last read, found by the next read at least 0.5 s on.
            time.sleep(0.6)
            (m.path / "train/00000.bin").read_bytes()
            run = harness.run_cli(["stats", str(m.path), "--epochs"], m.env)
            print(run.stdout, end="")
            return run.rc
        finally:
            m.close()
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
