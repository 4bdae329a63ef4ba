"""The cache server (`warmfs serve`) and mounts that read through it (`--cache-server`).

On one machine, processes stand in for nodes: a server with an SSD tier, and mounts with no
local cache dir and 16M memory caches, each on its own mountpoint. What is checked:
- three mounts reading one dataset (sequential files, random 4 KiB reads, tar shards) at the
  same time, then again through fresh mounts after the server restarted: every sha256 matches,
  and the bucket gave exactly one copy of the dataset (the server's bucket_bytes_read plus each
  mount's own), with one GET per chunk however many mounts missed on it at once; the second
  pass came from the server's SSD tier (no bucket bytes at all);
- two servers: chunks spread near evenly; one stopped mid-read: reads go on, byte-exact,
  through the bucket, with a warning; restarted: used again;
- no token, a wrong token, another bucket, a version the bucket does not have, an object the
  server's own credentials may not read (moto with IAM): refused, no data served;
- `warmfs prefetch` through such a mount warms the server; TLS with a certificate.

Bulk data on s3rver; the IAM test on moto with authentication on. Every server process and
mount is stopped in cleanup, also when a test fails.
"""

import hashlib
import io
import json
import os
import random
import signal
import subprocess
import tarfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import harness
import ssd_helpers as ssd
from harness import KiB, MiB

S3RVER: harness.S3rver
MOTO: harness.MotoServer
BUCKET = "shared"
MEM = ["--memory-cache-size", "16M"]
CHUNK = MiB


def _tar_shard(seed: int, files: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for i in range(files):
            data = harness.make_data(37 * KiB + 4099 * i, seed=seed * 100 + i)
            info = tarfile.TarInfo(f"sample-{i:04d}.bin")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# ~45 MiB: sequential files, one file for random reads, tar shards of small samples.
SEQ = {f"seq/s{i}.bin": harness.make_data(n, seed=10 + i)
       for i, n in enumerate([6 * MiB, 5 * MiB + 17, 7 * MiB - 3, 3 * MiB])}
RND = {"rnd/r.bin": harness.make_data(8 * MiB + 4095, seed=20)}
TAR = {f"tar/shard-{i}.tar": _tar_shard(30 + i, 40) for i in range(3)}
DATASET = {**SEQ, **RND, **TAR}
DATASET_BYTES = sum(len(v) for v in DATASET.values())
DATASET_CHUNKS = sum((len(v) + CHUNK - 1) // CHUNK for v in DATASET.values())
# Two servers: 64 chunks in 8 files.
SPREAD = {f"spread/f{i}.bin": harness.make_data(8 * MiB, seed=50 + i) for i in range(8)}
PRE = {f"pre/p{i}.bin": harness.make_data(3 * MiB + i, seed=70 + i) for i in range(4)}


def setUpModule():
    harness.require("warmfs", "fuse", "moto", "s3rver")
    ssd.require_cache_dir_support()
    global S3RVER, MOTO
    S3RVER = harness.start_server(unittest.addModuleCleanup, harness.S3rver())
    c = S3RVER.client()
    harness.create_bucket(c, BUCKET)
    harness.create_bucket(c, "other")
    harness.put_many(c, BUCKET, {**DATASET, **SPREAD, **PRE})
    harness.put_object(c, "other", "o.bin", harness.make_data(MiB, seed=99))
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def etag_of(client, bucket: str, key: str) -> str:
    return client.head_object(Bucket=bucket, Key=key)["ETag"].strip('"')


class CacheServer:
    """A `warmfs serve` process on a fixed port, so a restart comes back at the same URL."""

    def __init__(self, case, s3: harness._Server, *, cache_dir: Path, token_file: Path | None,
                 buckets: str = BUCKET, extra: list[str] = (), key: str | None = None,
                 secret: str | None = None, name: str = "serve"):
        self.case, self.s3 = case, s3
        self.port = harness.free_port()
        self.cache_dir, self.token_file = cache_dir, token_file
        self.buckets, self.extra = buckets, list(extra)
        self.key, self.secret = key or s3.key, secret or s3.secret
        self.proc: subprocess.Popen | None = None
        self.log = harness.log_dir("servers") / f"warmfs-{name}-{self.port}.log"
        self.home = harness.temp_dir(case.addCleanup, "warmfs-serve-home-")
        case.addCleanup(self.stop)
        self.scheme = "https" if "--tls-cert" in self.extra else "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        auth = ["--token-file", str(self.token_file)] if self.token_file else ["--insecure-no-token"]
        return [str(harness.WARMFS), "serve", "--bucket", self.buckets,
                "--listen", f"127.0.0.1:{self.port}", "--endpoint", self.s3.endpoint,
                "--region", harness.REGION, "--path-style", "--cache-dir", str(self.cache_dir),
                "--cache-size", "256M", "--memory-cache-size", "64M", "--log-level", "debug",
                *auth, *self.extra]

    def start(self) -> "CacheServer":
        env = harness.base_env(self.home, self.key, self.secret)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv(), env=env, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        with harness._live_lock:
            harness._live_procs[self.proc.pid] = self.proc
        harness.wait_port(self.port, self.proc, self.log, 30)
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        with harness._live_lock:
            harness._live_procs.pop(self.proc.pid, None)
        self.proc = None

    def stats(self) -> dict:
        """Through the CLI: `warmfs stats --server URL --json`."""
        args = ["stats", "--server", self.url, "--json"]
        args += ["--token-file", str(self.token_file)] if self.token_file else ["--insecure-no-token"]
        if self.scheme == "https":
            args += ["--cache-server-ca", self.extra[self.extra.index("--tls-cert") + 1]]
        run = harness.run_cli(args, harness.base_env(self.home), timeout=15)
        if run.rc != 0:
            raise AssertionError(f"warmfs stats --server failed\n{run.describe()}")
        return json.loads(run.stdout)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def http_get(url: str, token: str | None) -> tuple[int, bytes, dict]:
    req = urllib.request.Request(url)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def chunk_url(server: CacheServer, bucket: str, key: str, etag: str, index: int) -> str:
    q = urllib.parse.urlencode({"bucket": bucket, "key": key, "etag": etag, "index": index,
                                "chunk_size": CHUNK}, quote_via=urllib.parse.quote)
    return f"{server.url}/v1/chunk?{q}"


def read_dataset(path: Path, seed: int) -> dict[str, str]:
    """Reads DATASET through a mount as a job would: sequential files whole, random 4 KiB reads
    (checked against the source) then the file whole, tar shards member by member; returns the
    sha256 of every file read whole."""
    shas = {}
    for k in SEQ:
        shas[k] = sha((path / k).read_bytes())
    rng = random.Random(seed)
    for k, src in RND.items():
        with open(path / k, "rb") as f:
            for _ in range(200):
                off = rng.randrange(0, len(src) - 4 * KiB)
                f.seek(off)
                got = f.read(4 * KiB)
                if got != src[off:off + 4 * KiB]:
                    raise AssertionError(f"{k}: wrong bytes at {off}")
        shas[k] = sha((path / k).read_bytes())
    for k, src in TAR.items():
        with tarfile.open(path / k, "r") as tar, tarfile.open(fileobj=io.BytesIO(src)) as want:
            for member in want.getmembers():
                got = tar.extractfile(member.name).read()
                if got != want.extractfile(member).read():
                    raise AssertionError(f"{k}: member {member.name} differs")
        shas[k] = sha((path / k).read_bytes())
    return shas


class ServeCase(harness.WarmfsTestCase):
    timeout = 150.0

    def setUp(self):
        super().setUp()
        self.dir = ssd.temp_dir(self.addCleanup, "warmfs-serve-")
        self.token = "tok-" + os.urandom(12).hex()
        self.token_file = self.dir / "token"
        self.token_file.write_text(self.token + "\n")
        self.token_file.chmod(0o600)

    def server(self, name: str = "cache", **kw) -> CacheServer:
        kw.setdefault("token_file", self.token_file)
        return CacheServer(self, kw.pop("s3", S3RVER), cache_dir=self.dir / f"{name}-ssd", name=name, **kw)

    def mount_via(self, servers: list[CacheServer], *, token: bool = True, args: list[str] = (),
                  s3: harness._Server | None = None, url: str = f"s3://{BUCKET}") -> harness.Mount:
        auth = ["--token-file", str(self.token_file)] if token else []
        return self.mount(s3 or S3RVER, url, args=[
            "--read-only", *MEM, "--cache-server", ",".join(s.url for s in servers), *auth, *args])

    def assert_no_data(self, status: int, body: bytes, want: int):
        self.assertEqual(status, want, body[:200])
        doc = json.loads(body)  # an error document, never chunk bytes
        self.assertIn("error", doc)


class SharedTier(ServeCase):
    def test_three_mounts_pull_one_copy_from_the_bucket(self):
        srv = self.server().start()
        expected = {k: sha(v) for k, v in DATASET.items()}

        def pass_of(label: str) -> list[harness.Mount]:
            mounts = [self.mount_via([srv]) for _ in range(3)]
            results, errors = [None] * 3, []

            def job(i):
                try:
                    results[i] = read_dataset(mounts[i].path, seed=i)
                except Exception as e:  # noqa: BLE001  (reported below)
                    errors.append(f"mount {i}: {e!r}")

            started = time.monotonic()
            threads = [threading.Thread(target=job, args=(i,)) for i in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(errors, [], label)
            for i in range(3):
                self.assertEqual(results[i], expected, f"{label}: mount {i} read wrong bytes")
            ssd.note(f"{label}: 3 mounts read {DATASET_BYTES / MiB:.1f} MiB each in "
                     f"{time.monotonic() - started:.1f} s")
            return mounts

        mounts = pass_of("pass 1")
        s1 = srv.stats()
        own = [m.stats() for m in mounts]
        mount_bucket = sum(s["bucket_bytes_read"] for s in own)
        ssd.note(f"pass 1: bucket bytes: server {s1['bucket_bytes_read']}, mounts {mount_bucket}, "
                 f"dataset {DATASET_BYTES} ({DATASET_CHUNKS} chunks); server GETs "
                 f"{s1['bucket_requests']['get']}, served {s1['bytes_served']}")
        self.assertEqual(mount_bucket, 0, "a mount read the bucket although the server was up")
        self.assertEqual(s1["bucket_bytes_read"] + mount_bucket, DATASET_BYTES)
        # Concurrent identical misses of three mounts: one GET per chunk.
        self.assertEqual(s1["bucket_requests"]["get"], DATASET_CHUNKS)
        self.assertGreaterEqual(s1["bytes_served"], 3 * DATASET_BYTES)
        self.assertEqual(s1["clients"], 3)
        for s in own:
            if "cache_server_hit_bytes" in s:  # with the Filesystem stats hook (docs/cache-server.md)
                ssd.note(f"mount: cache_server_hit_bytes {s['cache_server_hit_bytes']}, "
                         f"miss_bytes {s['cache_server_miss_bytes']}, errors {s['cache_server_errors']}")
                self.assertGreaterEqual(s["cache_server_hit_bytes"] + s["cache_server_miss_bytes"], DATASET_BYTES)
                self.assertEqual(s["cache_server_errors"], 0)
        for m in mounts:
            ssd.unmount(self, m)

        # A restart keeps the SSD tier: fresh mounts, a fresh server process, no bucket bytes.
        srv.stop()
        srv.start()
        mounts = pass_of("pass 2 (server restarted)")
        s2 = srv.stats()
        own = [m.stats() for m in mounts]
        ssd.note(f"pass 2: server bucket bytes {s2['bucket_bytes_read']}, hit ratio {s2['hit_ratio']:.2f}, "
                 f"ssd used {s2['ssd_cache']['used_bytes']}")
        self.assertEqual(s2["bucket_bytes_read"], 0)
        self.assertEqual(sum(s["bucket_bytes_read"] for s in own), 0)
        self.assertEqual(s2["miss_bytes"], 0)
        self.assertGreaterEqual(s2["hit_bytes"], 3 * DATASET_BYTES)
        self.assertGreater(s2["ssd_cache"]["hit_bytes"], 0)

        # The human-readable form names what the issue asks for.
        run = harness.run_cli(["stats", "--server", srv.url, "--token-file", self.token_file],
                              harness.base_env(self.dir), timeout=15)
        self.assertEqual(run.rc, 0, run.describe())
        for word in ("served", "hit ratio", "from the bucket", "clients", "p50", "p99"):
            self.assertIn(word, run.stdout)

    def test_prefetch_through_a_mount_warms_the_server(self):
        srv = self.server().start()
        m = self.mount_via([srv])
        run = harness.run_cli(["prefetch", m.path, "pre"], m.env, timeout=120)
        self.assertEqual(run.rc, 0, run.describe())
        pre_bytes = sum(len(v) for v in PRE.values())
        s1 = srv.stats()
        self.assertEqual(s1["bucket_bytes_read"], pre_bytes)
        # Another node reads it: all from the server, nothing from the bucket.
        other = self.mount_via([srv])
        for k, v in PRE.items():
            self.assertEqual(sha((other.path / k).read_bytes()), sha(v))
        s2 = srv.stats()
        self.assertEqual(s2["bucket_bytes_read"], pre_bytes)
        self.assertGreaterEqual(s2["hit_bytes"] - s1["hit_bytes"], pre_bytes)
        self.assertEqual(other.stats()["bucket_bytes_read"], 0)


class TwoServers(ServeCase):
    def test_spread_stop_one_mid_read_and_bring_it_back(self):
        a, b = self.server("a").start(), self.server("b").start()
        m = self.mount_via([a, b])
        keys = sorted(SPREAD)
        for k in keys:
            self.assertEqual(sha((m.path / k).read_bytes()), sha(SPREAD[k]))
        sa, sb = a.stats(), b.stats()
        chunks = sa["chunk_requests"] + sb["chunk_requests"]
        share = sa["chunk_requests"] / chunks
        ssd.note(f"spread of {chunks} chunks over two servers: {sa['chunk_requests']} / {sb['chunk_requests']}")
        self.assertEqual(chunks, 64)
        # Binomial(64, 1/2) leaves [0.3, 0.7] with probability ~0.1%.
        self.assertGreater(share, 0.3)
        self.assertLess(share, 0.7)
        self.assertEqual(sa["bucket_bytes_read"] + sb["bucket_bytes_read"], 64 * MiB)
        self.assertEqual(m.stats()["bucket_bytes_read"], 0)

        # Stop b in the middle of a read: the read goes on, through the bucket for b's chunks.
        k = keys[4]
        ssd.drop_page_cache()  # the reads below must reach warmfs, and its 16M hold keys[6:]
        with open(m.path / k, "rb") as f:
            first = f.read(3 * MiB)
            b.stop(signal.SIGKILL)
            rest = f.read()
        self.assertEqual(sha(first + rest), sha(SPREAD[k]))
        for k in keys[:2]:
            self.assertEqual(sha((m.path / k).read_bytes()), sha(SPREAD[k]))
        fell_back = m.stats()["bucket_bytes_read"]
        ssd.note(f"with b down: {fell_back} bytes from the bucket")
        self.assertGreater(fell_back, 0)
        log = m.log.read_text(errors="replace")
        self.assertIn(f"cache server {b.url} failed", log)
        # Rate-limited: far fewer warnings than chunks that fell back.
        self.assertLessEqual(log.count(f"cache server {b.url} failed"), 3)

        # Restart b: once its backoff has passed, the mount reads through it again.
        b.start()
        deadline = time.monotonic() + 40
        served, i = 0, 2
        while time.monotonic() < deadline:
            # Each pass reads another 8 MiB file, so the 16M memory cache cannot answer it.
            k = keys[i % len(keys)]
            i += 1
            ssd.drop_page_cache()
            self.assertEqual(sha((m.path / k).read_bytes()), sha(SPREAD[k]))
            served = b.stats()["chunk_requests"]
            if served > 0:
                break
            time.sleep(0.5)
        ssd.note(f"b used again after {i} files read since its restart")
        self.assertGreater(served, 0, "the restarted server was not used again")
        self.assertIn(f"cache server {b.url} answers again", m.log.read_text(errors="replace"))
        s = m.stats()
        if "cache_server_errors" in s:
            self.assertGreater(s["cache_server_errors"], 0)


class SlowAndLocal(ServeCase):
    def test_a_stalled_server_falls_back_to_the_bucket(self):
        srv = self.server().start()
        m = self.mount_via([srv])
        k = sorted(SPREAD)[0]
        srv.proc.send_signal(signal.SIGSTOP)  # accepts connections (kernel backlog), answers nothing
        self.addCleanup(lambda: srv.proc and srv.proc.send_signal(signal.SIGCONT))
        started = time.monotonic()
        self.assertEqual(sha((m.path / k).read_bytes()), sha(SPREAD[k]))
        took = time.monotonic() - started
        ssd.note(f"8 MiB read with the server stopped: {took:.1f} s")
        self.assertLess(took, 40)
        self.assertEqual(m.stats()["bucket_bytes_read"], len(SPREAD[k]))
        self.assertIn(f"cache server {srv.url} failed", m.log.read_text(errors="replace"))
        srv.proc.send_signal(signal.SIGCONT)

    def test_a_local_ssd_tier_above_the_server_keeps_what_it_sent(self):
        srv = self.server().start()
        cache = self.dir / "local-ssd"
        args = ["--cache-dir", str(cache), "--cache-size", "128M"]
        m = self.mount_via([srv], args=args)
        for k, v in PRE.items():
            self.assertEqual(sha((m.path / k).read_bytes()), sha(v))
        self.assertEqual(m.stats()["bucket_bytes_read"], 0)
        ssd.unmount(self, m)
        srv.stop()
        # The server is gone; the node's own tier answers, nothing comes from the bucket.
        m = self.mount_via([srv], args=args)
        ssd.drop_page_cache()
        for k, v in PRE.items():
            self.assertEqual(sha((m.path / k).read_bytes()), sha(v))
        s = m.stats()
        self.assertEqual(s["bucket_bytes_read"], 0)
        self.assertEqual(s["disk_hit_bytes"], sum(len(v) for v in PRE.values()))


class Refusals(ServeCase):
    def test_no_token_wrong_token_refused_with_no_data(self):
        srv = self.server().start()
        key = next(iter(SEQ))
        etag = etag_of(S3RVER.client(), BUCKET, key)
        url = chunk_url(srv, BUCKET, key, etag, 0)
        self.assert_no_data(*http_get(url, None)[:2], 401)
        self.assert_no_data(*http_get(url, "wrong-" + self.token)[:2], 401)
        status, body, headers = http_get(url, self.token)
        self.assertEqual(status, 200)
        self.assertEqual(body, SEQ[key][:CHUNK])
        self.assertEqual(len(headers["X-Warmfs-Crc32c"]), 8)

        # A mount with a wrong token is refused with a clear line, and nothing is mounted.
        bad = self.dir / "bad-token"
        bad.write_text("not-the-token\n")
        bad.chmod(0o600)
        m = harness.Mount(S3RVER, f"s3://{BUCKET}", args=[
            "--read-only", *MEM, "--cache-server", srv.url, "--token-file", str(bad)], name="wrong-token")
        self.addCleanup(m.close)
        run = harness.run_cli(m.args, m.env, timeout=30)
        self.assertEqual(run.rc, 1, run.describe())
        self.assertIn("refused the token (401 Unauthorized)", run.stderr)
        self.assertFalse(harness.is_mounted(m.path))
        # Without --token-file: a usage error.
        run = harness.run_cli(m.args[:-2], m.env, timeout=30)
        self.assertEqual(run.rc, 2, run.describe())
        self.assertIn("--cache-server needs --token-file", run.stderr)
        # warmfs stats --server with a wrong token.
        run = harness.run_cli(["stats", "--server", srv.url, "--token-file", bad], m.env, timeout=15)
        self.assertEqual(run.rc, 1, run.describe())
        self.assertIn("refused the token", run.stderr)
        s = srv.stats()
        self.assertGreaterEqual(s["refused"]["unauthorized"], 4)
        self.assertEqual(s["bytes_served"], CHUNK)

    def test_serve_needs_a_token_file(self):
        srv = self.server(token_file=None)
        argv = [a for a in srv.argv() if a != "--insecure-no-token"]
        run = harness.run_cli(argv[1:], harness.base_env(self.dir, S3RVER.key, S3RVER.secret), timeout=30)
        self.assertEqual(run.rc, 2, run.describe())
        self.assertIn("warmfs serve needs --token-file", run.stderr)

    def test_versions_the_server_cannot_fetch_are_refused(self):
        srv = self.server().start()
        c = S3RVER.client()
        key = next(iter(SEQ))
        etag = etag_of(c, BUCKET, key)
        other_etag = etag_of(c, "other", "o.bin")
        # Another bucket (the server serves only BUCKET), a version the bucket does not have,
        # a key that does not exist, a chunk past the end.
        self.assert_no_data(*http_get(chunk_url(srv, "other", "o.bin", other_etag, 0), self.token)[:2], 404)
        self.assert_no_data(*http_get(chunk_url(srv, BUCKET, key, "0" * 32, 0), self.token)[:2], 412)
        self.assert_no_data(*http_get(chunk_url(srv, BUCKET, "nope.bin", etag, 0), self.token)[:2], 404)
        self.assert_no_data(*http_get(chunk_url(srv, BUCKET, key, etag, 1000), self.token)[:2], 416)
        s = srv.stats()
        self.assertEqual(s["bytes_served"], 0)
        self.assertEqual(s["bucket_bytes_read"], 0)
        # A mount of a bucket the server does not serve is refused before mounting.
        m = harness.Mount(S3RVER, "s3://other", args=[
            "--read-only", *MEM, "--cache-server", srv.url, "--token-file", str(self.token_file)],
            name="other-bucket")
        self.addCleanup(m.close)
        run = harness.run_cli(m.args, m.env, timeout=30)
        self.assertEqual(run.rc, 1, run.describe())
        self.assertIn("does not serve bucket other", run.stderr)

    def test_objects_the_servers_credentials_may_not_read_are_refused(self):
        # moto with IAM: the server's user may read public/* only; the client's may read all.
        iam = harness.boto3.session.Session(aws_access_key_id=MOTO.key, aws_secret_access_key=MOTO.secret,
                                            region_name=harness.REGION).client("iam", endpoint_url=MOTO.endpoint)
        user = "serve-" + os.urandom(4).hex()
        iam.create_user(UserName=user)
        iam.put_user_policy(UserName=user, PolicyName="public-only", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": "arn:aws:s3:::iamb"},
                {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::iamb/public/*"}]}))
        ak = iam.create_access_key(UserName=user)["AccessKey"]
        c = MOTO.client()
        harness.create_bucket(c, "iamb")
        pub, priv = harness.make_data(MiB + 5, seed=81), harness.make_data(MiB + 6, seed=82)
        harness.put_object(c, "iamb", "public/a.bin", pub)
        harness.put_object(c, "iamb", "private/b.bin", priv)
        srv = self.server("iam", s3=MOTO, buckets="iamb", key=ak["AccessKeyId"],
                          secret=ak["SecretAccessKey"]).start()
        status, body, _ = http_get(chunk_url(srv, "iamb", "public/a.bin", etag_of(c, "iamb", "public/a.bin"), 0),
                                   self.token)
        self.assertEqual(status, 200)
        self.assertEqual(body, pub[:CHUNK])
        self.assert_no_data(*http_get(chunk_url(srv, "iamb", "private/b.bin", etag_of(c, "iamb", "private/b.bin"), 0),
                                      self.token)[:2], 403)
        s = srv.stats()
        self.assertEqual(s["bytes_served"], CHUNK)
        self.assertEqual(s["refused"]["forbidden"], 1)
        # A mount whose own credentials may read it still reads it (from the bucket).
        m = self.mount_via([srv], s3=MOTO, url="s3://iamb")
        self.assertEqual((m.path / "private" / "b.bin").read_bytes(), priv)
        self.assertEqual((m.path / "public" / "a.bin").read_bytes(), pub)
        self.assertEqual(m.stats()["bucket_bytes_read"], len(priv))


class Tls(ServeCase):
    def test_https_with_a_certificate(self):
        cert, key = self.dir / "cert.pem", self.dir / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
        srv = self.server("tls", extra=["--tls-cert", str(cert), "--tls-key", str(key)]).start()
        m = self.mount_via([srv], args=["--cache-server-ca", str(cert)])
        k = next(iter(PRE))
        self.assertEqual(sha((m.path / k).read_bytes()), sha(PRE[k]))
        s = srv.stats()
        self.assertTrue(s["tls"])
        self.assertEqual(s["bytes_served"], len(PRE[k]))
        self.assertEqual(m.stats()["bucket_bytes_read"], 0)
        # Plain http to the TLS port gets no data.
        with self.assertRaises(Exception):
            urllib.request.urlopen(f"http://127.0.0.1:{srv.port}/v1/health", timeout=5).read()


if __name__ == "__main__":
    unittest.main()
