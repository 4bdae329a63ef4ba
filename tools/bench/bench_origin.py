"""The benchmark's data set and origin: files made once on local disk, a persistent s3rver holding
the same bytes, and tools/s3proxy in front of it adding first-byte latency (and a bandwidth cap).

Everything lives under one data directory (default /var/tmp/warmfs-bench/<size name>):
  local/            the local copy, laid out as the bucket's keys (the local limit reads it)
  s3rver/           s3rver's own store of bucket `bench` (reused between runs)
  manifest.json     what was made and uploaded, so a later run reuses it
Generation and upload of the full set (~5.75 GiB) take a few minutes; a later run with the same
spec starts at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import random
import shutil
import subprocess
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchlib import MiB, harness

REPO = Path(__file__).resolve().parents[2]
BUCKET = "bench"
KiB = 1 << 10


@dataclasses.dataclass(frozen=True)
class Spec:
    """Sizes of the data set. FULL is issue 6's; SMOKE proves the harness in seconds."""
    name: str
    big_count: int = 4
    big_mib: int = 1024
    token_mib: int = 512
    small_dirs: int = 8
    small_per_dir: int = 500
    small_kib: int = 64
    shards: int = 32
    shard_mib: int = 32
    blob_kib: int = 100
    ckpt_mib: int = 512

    def key(self) -> dict:
        return dataclasses.asdict(self)

    # Keys in the bucket (and paths under local/).
    def big_keys(self) -> list[str]:
        return [f"big/obj-{i}.bin" for i in range(self.big_count)]

    token_key = "token/tokens.bin"

    def small_keys(self) -> list[str]:
        return [f"small/d{d}/f{i:04d}.bin" for d in range(self.small_dirs)
                for i in range(self.small_per_dir)]

    def shard_keys(self) -> list[str]:
        return [f"shards/shard-{i:04d}.tar" for i in range(self.shards)]

    def all_keys(self) -> list[str]:
        return self.big_keys() + [self.token_key] + self.small_keys() + self.shard_keys()

    def total_bytes(self) -> int:
        return (self.big_count * self.big_mib + self.token_mib + self.shards * self.shard_mib) * MiB + \
            self.small_dirs * self.small_per_dir * self.small_kib * KiB


# Origin shapes (--origin-shape). `plain` is the proxy as the command line sets it (15 ms first
# byte, no cap); `capped` is an object store's: each connection is held to 50 MB/s (400 Mbit/s)
# and the first byte takes 25 ms, so a reader gets the origin's bandwidth only by spreading its
# requests over many connections. A shape other than `plain` measures the cold phase only, and
# records it as phase `cold-<shape>` (its own rows in the report).
SHAPES = {"plain": None,
          "capped": {"first_byte_delay_ms": 25.0, "bandwidth_mbps": 400.0, "bandwidth_scope": "connection"}}


FULL = Spec("full")
SMOKE = Spec("smoke", big_count=4, big_mib=8, token_mib=8, small_dirs=8, small_per_dir=5,
             small_kib=64, shards=2, shard_mib=1, blob_kib=100, ckpt_mib=8)


def log(msg: str) -> None:
    print(f"bench {time.strftime('%H:%M:%S')} {msg}", flush=True)


def _write_random(path: Path, nbytes: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(path.name)
    with open(path, "wb") as f:
        left = nbytes
        while left:
            n = min(left, 8 * MiB)
            f.write(rng.randbytes(n))
            left -= n


def _write_shard(path: Path, index: int, spec: Spec) -> int:
    """A WebDataset shard: (NNNNNN.bin blob, NNNNNN.json label) pairs up to ~shard_mib MiB."""
    rng = random.Random(index)
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = 0
    limit = spec.shard_mib * MiB
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
        size = 0
        while size + spec.blob_kib * KiB + 3 * 512 + 1024 <= limit:
            stem = f"{index:04d}{samples:06d}"
            blob = rng.randbytes(spec.blob_kib * KiB)
            label = json.dumps({"label": rng.randrange(1000), "shard": index, "sample": samples}).encode()
            for name, data in ((stem + ".bin", blob), (stem + ".json", label)):
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                ti.mtime = 1700000000
                tf.addfile(ti, io.BytesIO(data))
            size += 512 + len(blob) + (-len(blob)) % 512 + 512 + len(label) + (-len(label)) % 512
            samples += 1
    return samples


def make_local(root: Path, spec: Spec) -> dict:
    """The local copy; returns {"samples": total tar samples}."""
    root.mkdir(parents=True, exist_ok=True)
    log(f"making the data set in {root} ({spec.total_bytes() / 2**30:.2f} GiB)")
    jobs = [(root / k, spec.big_mib * MiB) for k in spec.big_keys()] + \
        [(root / spec.token_key, spec.token_mib * MiB)] + \
        [(root / k, spec.small_kib * KiB) for k in spec.small_keys()]
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda j: _write_random(*j), jobs))
        samples = sum(pool.map(lambda ik: _write_shard(root / ik[1], ik[0], spec),
                               enumerate(spec.shard_keys())))
    return {"samples": samples}


class Origin:
    """s3rver on a persistent store, and s3proxy in front of it. start() / stop()."""

    def __init__(self, data_dir: Path, logs: Path, first_byte_ms: float, bandwidth_mbps: float):
        self.store = data_dir / "s3rver"
        self.logs = logs
        self.first_byte_ms = first_byte_ms
        self.bandwidth_mbps = bandwidth_mbps
        self.s3rver: subprocess.Popen | None = None
        self.proxy: subprocess.Popen | None = None
        self.s3rver_port = 0
        self.proxy_port = 0
        self.control_port = 0

    @property
    def direct(self) -> str:
        return f"http://127.0.0.1:{self.s3rver_port}"

    @property
    def endpoint(self) -> str:
        """What every system and limit talks to: the proxy."""
        return f"http://127.0.0.1:{self.proxy_port}"

    def start(self) -> None:
        harness.require("s3rver")
        self.store.mkdir(parents=True, exist_ok=True)
        self.s3rver_port = harness.free_port()
        node = shutil.which("node", path=harness.BASE_PATH)
        log_path = self.logs / "s3rver.log"
        # --openssl-legacy-provider: s3rver's continuation tokens need DES (see docs/testing.md).
        self.s3rver = subprocess.Popen(
            [node, "--openssl-legacy-provider", str(harness.S3RVER_JS), "-d", str(self.store),
             "-a", "127.0.0.1", "-p", str(self.s3rver_port), "--silent"],
            env={"PATH": harness.BASE_PATH, "HOME": str(self.store), "LANG": "C.UTF-8"},
            stdin=subprocess.DEVNULL, stdout=open(log_path, "wb"), stderr=subprocess.STDOUT,
            start_new_session=True)
        harness.wait_port(self.s3rver_port, self.s3rver, log_path, 30)
        port_file = self.logs / "proxy.port"
        control_file = self.logs / "proxy.control"
        for f in (port_file, control_file):
            f.unlink(missing_ok=True)
        argv = [str(REPO / "tools" / "s3proxy"), "--listen", "127.0.0.1:0",
                "--upstream", f"127.0.0.1:{self.s3rver_port}",
                "--first-byte-delay-ms", str(self.first_byte_ms),
                "--port-file", str(port_file), "--control-port-file", str(control_file)]
        if self.bandwidth_mbps:
            argv += ["--bandwidth-mbps", str(self.bandwidth_mbps), "--bandwidth-scope", "total"]
        self.proxy = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                      stdout=open(self.logs / "s3proxy.log", "wb"),
                                      stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 20
        while not (port_file.exists() and control_file.exists() and port_file.read_text().strip()
                   and control_file.read_text().strip()):
            if self.proxy.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"s3proxy did not start; see {self.logs / 's3proxy.log'}")
            time.sleep(0.05)
        self.proxy_port = int(port_file.read_text())
        self.control_port = int(control_file.read_text())
        client = self.client(direct=True)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.list_buckets()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        for p in (self.proxy, self.s3rver):
            if p is not None:
                harness._stop_popen(p)
        self.proxy = self.s3rver = None

    def set_shape(self, shape: str, first_byte_ms: float, bandwidth_mbps: float) -> dict:
        """Switches the proxy to an origin shape (SHAPES; `plain` is first_byte_ms and a total
        cap of bandwidth_mbps) through its control API; returns the settings now in force."""
        import urllib.request
        settings = SHAPES[shape] or {"first_byte_delay_ms": float(first_byte_ms),
                                     "bandwidth_mbps": float(bandwidth_mbps), "bandwidth_scope": "total"}
        req = urllib.request.Request(f"http://127.0.0.1:{self.control_port}/settings",
                                     data=json.dumps(settings).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            now = json.loads(r.read())
        if any(now[k] != v for k, v in settings.items()):
            raise RuntimeError(f"s3proxy settings are {now}, wanted {settings}")
        return now

    def client(self, direct: bool = False):
        return harness.s3_client(self.direct if direct else self.endpoint, harness.S3RVER_KEY,
                                 harness.S3RVER_SECRET)

    def proxy_stats(self) -> dict:
        import urllib.request
        with urllib.request.urlopen(f"http://127.0.0.1:{self.control_port}/stats", timeout=10) as r:
            return json.loads(r.read())

    def object_path(self, key: str) -> Path:
        """Where s3rver keeps an object's bytes (to warm the origin's own page cache)."""
        return self.store / BUCKET / (key + "._S3rver_object")


def prepare(data_dir: Path, spec: Spec, origin: Origin) -> dict:
    """Make the local copy and upload it unless the manifest says both are there already."""
    manifest_path = data_dir / "manifest.json"
    manifest = {}
    with contextlib.suppress(Exception):
        manifest = json.loads(manifest_path.read_text())
    local = data_dir / "local"
    if manifest.get("spec") != spec.key() or not manifest.get("local_done"):
        shutil.rmtree(local, ignore_errors=True)
        manifest = {"spec": spec.key(), **make_local(local, spec), "local_done": True}
        manifest_path.write_text(json.dumps(manifest))
    client = origin.client(direct=True)
    uploaded = manifest.get("uploaded") and _spot_check(client, spec, local)
    if not uploaded:
        log(f"uploading {len(spec.all_keys())} objects to s3rver")
        with contextlib.suppress(Exception):
            client.create_bucket(Bucket=BUCKET)
        from boto3.s3.transfer import TransferConfig
        cfg = TransferConfig(multipart_threshold=8 * 1024 * MiB, max_concurrency=4)

        def up(key):
            client.upload_file(str(local / key), BUCKET, key, Config=cfg)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(up, spec.all_keys()))
        # s3rver answers PUT before the bytes are on disk: wait until every size shows.
        want = {k: (local / k).stat().st_size for k in spec.all_keys()}
        deadline = time.monotonic() + 120
        while True:
            have = {k: s for k, s in _list_sizes(client).items() if k in want}
            if have == want and all(origin.object_path(k).stat().st_size == want[k] for k in want):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("s3rver never showed every uploaded object")
            time.sleep(0.5)
        manifest["uploaded"] = True
        manifest_path.write_text(json.dumps(manifest))
    # s3rver drops a folder that holds only folders from its parent's listing (small/ holds
    # d0..d7): a marker object keeps small/ visible to clients that only list (rclone).
    client.put_object(Bucket=BUCKET, Key="small/", Body=b"")
    return manifest


# The `find` workload's tree: many tiny objects (a dataset's namespace), apart from the Spec so
# that adding it does not remake the other data. FULL: 100 directories of 1,000 keys (each
# directory one LIST page); SMOKE: 4 of 25.
TREE_FULL = (100, 1000)
TREE_SMOKE = (4, 25)


def tree_keys(shape: tuple[int, int]) -> list[str]:
    dirs, per_dir = shape
    return [f"tree/c{d:03d}/f{i:04d}.bin" for d in range(dirs) for i in range(per_dir)]


def prepare_tree(data_dir: Path, shape: tuple[int, int], origin: Origin) -> list[str]:
    """The tree under local/tree and in the bucket, made once (recorded in tree.json)."""
    keys = tree_keys(shape)
    marker = data_dir / "tree.json"
    with contextlib.suppress(Exception):
        if json.loads(marker.read_text()) == {"shape": list(shape), "done": True}:
            return keys
    local = data_dir / "local"
    shutil.rmtree(local / "tree", ignore_errors=True)
    for k in keys:
        p = local / k
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(k.encode())
    log(f"uploading the {len(keys)}-key tree to s3rver")
    client = origin.client(direct=True)
    with contextlib.suppress(Exception):
        client.create_bucket(Bucket=BUCKET)
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: client.put_object(Bucket=BUCKET, Key=k, Body=k.encode()), keys))
    # s3rver answers PUT before the bytes are on disk: wait until every key lists.
    deadline = time.monotonic() + 300
    while len(_list_sizes(client, "tree/")) < len(keys):
        if time.monotonic() > deadline:
            raise RuntimeError("s3rver never listed every key of the tree")
        time.sleep(1)
    # s3rver drops a folder that holds only folders from its parent's listing: a marker keeps
    # tree/ visible (as small/ in prepare()).
    client.put_object(Bucket=BUCKET, Key="tree/", Body=b"")
    marker.write_text(json.dumps({"shape": list(shape), "done": True}))
    return keys


def _list_sizes(client, prefix: str = "") -> dict[str, int]:
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        out.update({o["Key"]: o["Size"] for o in page.get("Contents", [])})
    return out


def _spot_check(client, spec: Spec, local: Path) -> bool:
    try:
        have = _list_sizes(client)
    except Exception:
        return False
    return all(have.get(k) == (local / k).stat().st_size for k in spec.all_keys())


def clear_prefix(client, prefix: str) -> None:
    keys = list(_list_sizes(client, prefix))
    for i in range(0, len(keys), 1000):
        client.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]]})
