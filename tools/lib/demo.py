#!/usr/bin/env python3
"""Helpers for tools/demo: make the sample dataset, read the mount, write a checkpoint.

  demo.py dataset ENDPOINT BUCKET MANIFEST   upload shards + small files, write their sha256s
  demo.py read MOUNT MANIFEST LABEL [--evict] read every file, check its bytes, print throughput
  demo.py checkpoint MOUNT ENDPOINT BUCKET   write a checkpoint through the mount, fsync, rename

Credentials for ENDPOINT come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, which tools/demo
sets explicitly; nothing is read from ~/.aws.
"""

import hashlib
import json
import os
import random
import sys
import time
from pathlib import Path

MiB = 1024 * 1024


def _client(endpoint):
    for name in [n for n in os.environ if n.startswith("AWS_") and n not in
                 ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")]:
        del os.environ[name]
    os.environ["AWS_CONFIG_FILE"] = os.environ["AWS_SHARED_CREDENTIALS_FILE"] = "/nonexistent"
    import boto3
    from botocore.config import Config
    return boto3.session.Session(region_name="us-east-1").client(
        "s3", endpoint_url=endpoint,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3},
                      request_checksum_calculation="when_required",
                      response_checksum_validation="when_required"))


def dataset(endpoint, bucket, manifest):
    """4 tar-like shards of 8 MiB, 256 small 'images' of 8-64 KiB, a labels file: ~41 MiB.
    Every folder holds a file: s3rver leaves folders that hold only folders out of listings."""
    c = _client(endpoint)
    c.create_bucket(Bucket=bucket)
    rng = random.Random(7)
    objects = {f"train/shard-{i:04d}.tar": rng.randbytes(8 * MiB) for i in range(4)}
    for i in range(256):
        objects[f"train/images/img-{i:05d}.jpg"] = rng.randbytes(
            rng.randint(8, 64) * 1024)
    objects["train/labels.csv"] = "".join(f"img-{i:05d}.jpg,{i % 10}\n"
                                          for i in range(256)).encode()
    objects["README.txt"] = b"warmfs demo dataset: shards, small files, labels\n"
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda kv: c.put_object(Bucket=bucket, Key=kv[0], Body=kv[1]),
                      objects.items()))
    # s3rver answers PUT before the bytes are on disk: wait until each object reads back whole.
    deadline = time.monotonic() + 60
    for key, data in objects.items():
        while c.head_object(Bucket=bucket, Key=key)["ContentLength"] != len(data):
            if time.monotonic() > deadline:
                sys.exit(f"demo: {key} never reached its size in the bucket")
            time.sleep(0.05)
    Path(manifest).write_text(json.dumps(
        {k: [len(v), hashlib.sha256(v).hexdigest()] for k, v in objects.items()}, indent=1))
    total = sum(len(v) for v in objects.values())
    print(f"  {len(objects)} objects, {total / MiB:.1f} MiB in s3://{bucket} "
          f"(4 shards of 8 MiB, 256 small files, labels)")


def read(mount, manifest, label, evict=False):
    """Read every file of the manifest through the mount; check size and sha256."""
    files = json.loads(Path(manifest).read_text())
    start = time.monotonic()
    total = bad = 0
    for key, (size, digest) in sorted(files.items()):
        path = Path(mount) / key
        fd = os.open(path, os.O_RDONLY)
        try:
            if evict:  # drop the kernel's page cache: measure warmfs's own memory cache
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            h = hashlib.sha256()
            while chunk := os.read(fd, MiB):
                h.update(chunk)
                total += len(chunk)
        finally:
            os.close(fd)
        if h.hexdigest() != digest:
            bad += 1
            print(f"  WRONG BYTES: {key}")
    seconds = time.monotonic() - start
    print(f"  {label}: {len(files)} files, {total / MiB:.1f} MiB in {seconds:.3f} s "
          f"= {total / MiB / seconds:.0f} MiB/s, {len(files) / seconds:.0f} files/s"
          f"{'' if bad else ', every byte checked'}")
    return 1 if bad else 0


def checkpoint(mount, endpoint, bucket):
    """The training checkpoint pattern through the mount: write checkpoints/step-000100.ckpt.tmp
    (16 MiB), fsync, rename to step-000100.ckpt. Checked with boto3 right after fsync returns
    (the object is in the bucket, same bytes) and after the rename (final key complete, .tmp
    gone)."""
    key = "checkpoints/step-000100.ckpt"
    data = random.Random(100).randbytes(16 * MiB)
    final = Path(mount) / key
    tmp = final.with_name(final.name + ".tmp")
    s3 = _client(endpoint)
    start = time.monotonic()
    try:
        final.parent.mkdir(exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view[:MiB]):]
            os.fsync(fd)
            seconds = time.monotonic() - start
            after_fsync = s3.get_object(Bucket=bucket, Key=key + ".tmp")["Body"].read() == data
        finally:
            os.close(fd)
        os.rename(tmp, final)
    except OSError as e:
        print(f"  checkpoint write FAILED: {e}")
        return 1
    same = s3.get_object(Bucket=bucket, Key=key)["Body"].read() == data
    tmp_gone = not any(o["Key"] == key + ".tmp"
                       for o in s3.list_objects_v2(Bucket=bucket, Prefix="checkpoints/").get("Contents", []))
    print(f"  checkpoint: {len(data) / MiB:.0f} MiB written and fsynced in {seconds:.2f} s; "
          f"in the bucket when fsync returned: {'yes, same bytes' if after_fsync else 'NO'}; "
          f"renamed to {key}: {'complete, .tmp gone' if same and tmp_gone else 'NOT as expected'}")
    return 0 if after_fsync and same and tmp_gone else 1


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "dataset":
        return dataset(*args)
    if cmd == "read":
        return read(args[0], args[1], args[2], evict="--evict" in args)
    if cmd == "checkpoint":
        return checkpoint(*args)
    sys.exit(f"demo.py: unknown command {cmd}")


if __name__ == "__main__":
    sys.exit(main() or 0)
