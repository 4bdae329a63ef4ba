#!/usr/bin/env python3
"""Runs the [moto] writes test against a running moto_server and checks its results with boto3.

Usage: WARMFS_MOTO_ENDPOINT=http://127.0.0.1:5055 python3 tests/unit/objstore/moto_write_check.py
       [path/to/warmfs_unit_tests]
Checks every object in the test's manifest by SHA-256 and size, that deleted keys are gone and
that no multipart upload is left open. Exit status 0 only if all hold.
"""
import hashlib
import os
import subprocess
import sys

import boto3

endpoint = os.environ["WARMFS_MOTO_ENDPOINT"]
bucket = os.environ.get("WARMFS_MOTO_BUCKET", "warmfs-moto")
manifest = os.environ.get("WARMFS_MOTO_MANIFEST", "/tmp/warmfs-moto-manifest.txt")
binary = sys.argv[1] if len(sys.argv) > 1 else "build/tests/warmfs_unit_tests"

s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id="testing", aws_secret_access_key="testing")
s3.create_bucket(Bucket=bucket)

env = dict(os.environ, WARMFS_MOTO_BUCKET=bucket, WARMFS_MOTO_MANIFEST=manifest)
run = subprocess.run([binary, "[moto]", "-s"], env=env, capture_output=True, text=True)
print(run.stdout[-3000:])
if run.returncode != 0:
    print(run.stderr[-3000:])
    sys.exit("C++ test failed")

failures = []
count = 0
for line in open(manifest):
    key, size, digest = line.rstrip("\n").rsplit(" ", 2)
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    got = hashlib.sha256(body).hexdigest()
    count += 1
    if len(body) != int(size) or got != digest:
        failures.append(f"{key}: {len(body)} bytes sha256 {got}, expected {size} {digest}")
    else:
        print(f"ok  {key:28} {size:>9} bytes  sha256 {digest[:16]}...")

left = s3.list_objects_v2(Bucket=bucket, Prefix="del/").get("Contents", [])
if left:
    failures.append(f"deleted keys still present: {[o['Key'] for o in left]}")
uploads = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
if uploads:
    failures.append(f"multipart uploads left open: {[(u['Key'], u['UploadId']) for u in uploads]}")
print(f"checked {count} objects; del/ empty: {not left}; open uploads: {len(uploads)}")
if failures:
    sys.exit("\n".join(failures))
print("moto write check: all good")
