#!/usr/bin/env python3
"""Checkpoint write: how long fsync() takes after the last write(), next to `aws s3 cp`.

Starts a local S3 server (s3rver by default, or moto with authentication), mounts warmfs on
it, and writes --size MiB to step.pt.tmp in 4 MiB pieces as a training job's checkpoint does:
write, flush, fsync, close, rename to step.pt. Then uploads the same bytes from a local file
with the aws CLI (its defaults: 8 MiB parts, 10 in parallel) to the same server. Prints one
JSON line per measurement, then a table. Checks the result with boto3 (size and sha256).
Not a test.

Usage: tools/bench/checkpoint.py [--size MiB] [--server s3rver|moto] [--upload-threads N]
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import MiB, harness  # noqa: E402

BUCKET = "ckpt"
PIECE = 4 * MiB


def aws_cli():
    """The aws CLI next to this Python (pip installs it there), else the one on PATH."""
    beside = Path(sys.executable).parent / "aws"
    return str(beside) if beside.exists() else (shutil.which("aws") or "aws")


def record(name, value, unit="s"):
    print(json.dumps({"measurement": name, unit: round(value, 3)}), flush=True)
    return value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1024, help="checkpoint size in MiB (default 1024)")
    ap.add_argument("--server", choices=["s3rver", "moto"], default="s3rver")
    ap.add_argument("--upload-threads", type=int, default=None, help="warmfs --upload-threads")
    args = ap.parse_args()
    size = args.size * MiB
    server = harness.S3rver() if args.server == "s3rver" else harness.MotoServer()
    server.start()
    try:
        s3 = server.client()
        s3.create_bucket(Bucket=BUCKET)
        with tempfile.TemporaryDirectory(prefix="warmfs-ckpt-", dir="/var/tmp") as tmp:
            tmp = Path(tmp)
            piece = os.urandom(PIECE)
            local = tmp / "step.pt"
            digest = hashlib.sha256()
            with open(local, "wb") as f:
                for i in range(size // PIECE):
                    data = piece[i % 251:] + piece[:i % 251]
                    digest.update(data)
                    f.write(data)
            mnt = tmp / "mnt"
            mnt.mkdir()
            env = harness.base_env(tmp, server.key, server.secret, None)
            cmd = [str(harness.WARMFS), "mount", f"s3://{BUCKET}", str(mnt), "--endpoint", server.endpoint,
                   "--path-style", "--log-file", str(tmp / "warmfs.log"), "--region", harness.REGION,
                   "--staging-dir", str(tmp / "staging")]
            if args.upload_threads:
                cmd += ["--upload-threads", str(args.upload_threads)]
            subprocess.run(cmd, env=env, check=True)
            try:
                start = time.monotonic()
                with open(mnt / "step.pt.tmp", "wb") as f:
                    with open(local, "rb") as src:
                        while data := src.read(PIECE):
                            f.write(data)
                    f.flush()
                    last_write = time.monotonic()
                    os.fsync(f.fileno())
                    synced = time.monotonic()
                os.rename(mnt / "step.pt.tmp", mnt / "step.pt")
                renamed = time.monotonic()
                write_s = record("warmfs_write_phase", last_write - start)
                fsync_s = record("warmfs_fsync_after_last_write", synced - last_write)
                total_s = record("warmfs_write_to_fsync_total", synced - start)
                rename_s = record("warmfs_rename", renamed - synced)
                stats = json.loads(subprocess.run([str(harness.WARMFS), "stats", str(mnt), "--json"],
                                                  capture_output=True, text=True, check=True).stdout)
            finally:
                subprocess.run([str(harness.WARMFS), "unmount", str(mnt)], check=True)
            head = s3.head_object(Bucket=BUCKET, Key="step.pt")
            body = s3.get_object(Bucket=BUCKET, Key="step.pt")["Body"].read()
            ok = head["ContentLength"] == size and hashlib.sha256(body).hexdigest() == digest.hexdigest()
            del body
            print(json.dumps({"durable_and_intact": ok, "bucket_bytes_written": stats["bucket_bytes_written"]}))

            cli_env = dict(env, AWS_ACCESS_KEY_ID=server.key, AWS_SECRET_ACCESS_KEY=server.secret,
                           AWS_DEFAULT_REGION=harness.REGION)
            start = time.monotonic()
            subprocess.run([aws_cli(), "s3", "cp", "--only-show-errors", "--endpoint-url", server.endpoint,
                            str(local), f"s3://{BUCKET}/cli.pt"], env=cli_env, check=True)
            cli_s = record("aws_cli_cp", time.monotonic() - start)
    finally:
        server.stop()

    print(f"\n| {args.size} MiB checkpoint on {args.server} | seconds | vs aws s3 cp |")
    print("| --- | ---: | ---: |")
    print(f"| aws s3 cp of the same bytes | {cli_s:.2f} | 1.00x |")
    print(f"| warmfs: write() calls | {write_s:.2f} | |")
    print(f"| warmfs: last write() to fsync() return | {fsync_s:.2f} | {fsync_s / cli_s:.2f}x |")
    print(f"| warmfs: open to fsync() return | {total_s:.2f} | {total_s / cli_s:.2f}x |")
    print(f"| warmfs: rename (server-side copy + delete) | {rename_s:.2f} | |")
    if not ok:
        print("checkpoint in the bucket does not match what was written", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
