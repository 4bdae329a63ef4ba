"""Integration-test harness: local S3 servers, real FUSE mounts of warmfs, and their cleanup.

What it does:
- MotoServer: moto on a free loopback port with authentication on. moto lets the first
  INITIAL_NO_AUTH_ACTION_COUNT requests through unsigned; the harness spends exactly those on making
  an IAM user, its admin policy and its access key, then checks that a wrong secret is refused.
  It runs through tools/lib/moto_server.py, which makes moto check SigV4 against the request as
  sent (stock moto 5.2 refuses any correctly signed listing with delimiter=/).
- S3rver: s3rver (node_modules, pinned in package.json) on a free port, its data in a temp directory.
- Mount: runs `warmfs mount` with an explicit environment (own HOME, credentials passed by name,
  nothing inherited from the caller's AWS_* variables or ~/.aws) and always unmounts in cleanup
  (fusermount3 -u, then umount -l), then kills the daemon if it is still alive.
- WarmfsTestCase: a TestCase with a per-test watchdog. A FUSE request that never gets an answer
  would block the test forever; the watchdog kills the warmfs daemons this harness started, which
  makes the blocked system call fail with ENOTCONN, so the test fails instead of hanging.

What it does not do: check bucket contents through warmfs (tests use boto3 for that), or skip.
A missing prerequisite (binary, moto, node/s3rver, /dev/fuse, fusermount3) raises, so every test
that needs it fails loudly.

Every process is started here and stopped here by its PID; atexit and SIGTERM stop what is left.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROXY = REPO / "tools" / "s3proxy"  # the fault and latency proxy
WARMFS = Path(os.environ.get("WARMFS_BIN") or REPO / "build" / "src" / "cli" / "warmfs")
S3RVER_JS = REPO / "node_modules" / "s3rver" / "bin" / "s3rver.js"
MOTO_WRAPPER = REPO / "tools" / "lib" / "moto_server.py"
LOG_ROOT = Path(os.environ.get("WARMFS_TEST_LOG_DIR") or REPO / "build" / "integration-logs")
REGION = "us-east-1"
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MiB = 1024 * 1024
KiB = 1024

# How many requests moto serves before it starts checking signatures: the three IAM calls below.
MOTO_FREE_ACTIONS = 3
S3RVER_KEY = S3RVER_SECRET = "S3RVER"  # s3rver's built-in account

# boto3 in this process: no caller config, no instance metadata, nothing from ~/.aws.
for _name in [n for n in os.environ if n.startswith("AWS_")]:
    del os.environ[_name]
os.environ["AWS_CONFIG_FILE"] = "/nonexistent/warmfs-tests/config"
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = "/nonexistent/warmfs-tests/credentials"
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"

import boto3  # noqa: E402  (after the environment is cleaned)
import botocore.exceptions  # noqa: E402
from boto3.s3.transfer import TransferConfig  # noqa: E402
from botocore.config import Config  # noqa: E402


class HarnessError(AssertionError):
    """A prerequisite or fixture failed: reported as a test failure, never as a skip."""


# --------------------------------------------------------------------------------------------
# Prerequisites


def require(*what: str) -> None:
    """Raise HarnessError naming every missing prerequisite among: warmfs, moto, s3rver, fuse."""
    missing = []
    if "warmfs" in what and not (WARMFS.is_file() and os.access(WARMFS, os.X_OK)):
        missing.append(f"warmfs binary {WARMFS} (build it: meson setup build && ninja -C build)")
    if "moto" in what:
        if importlib.util.find_spec("moto") is None or importlib.util.find_spec("flask") is None:
            missing.append("moto server (pip install 'moto[server]'; needs moto and flask)")
        if shutil.which("moto_server") is None:
            missing.append("moto_server on PATH (pip install 'moto[server]')")
    if "s3rver" in what:
        if shutil.which("node", path=BASE_PATH) is None:
            missing.append("node (apt-get install nodejs npm)")
        if not S3RVER_JS.is_file():
            missing.append(f"s3rver at {S3RVER_JS} (run `npm ci` at the repo root)")
    if "fuse" in what:
        if not os.path.exists("/dev/fuse"):
            missing.append("/dev/fuse (FUSE kernel module)")
        if shutil.which("fusermount3", path=BASE_PATH) is None:
            missing.append("fusermount3 (apt-get install fuse3)")
    if missing:
        raise HarnessError("missing prerequisites: " + "; ".join(missing))


# --------------------------------------------------------------------------------------------
# Processes the harness started, stopped by PID at exit whatever happens.

_live_lock = threading.Lock()  # protects _live_procs and _live_mounts
_live_procs: dict[int, subprocess.Popen] = {}
_live_mounts: list["Mount"] = []


def _stop_popen(proc: subprocess.Popen, grace: float = 5.0) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _at_exit() -> None:
    with _live_lock:
        mounts = list(_live_mounts)
        procs = list(_live_procs.values())
    for m in mounts:
        with contextlib.suppress(Exception):
            m.close()
    for p in procs:
        with contextlib.suppress(Exception):
            _stop_popen(p, grace=2.0)


atexit.register(_at_exit)


def _on_sigterm(signum, frame):  # unittest re-raises KeyboardInterrupt; then atexit cleans up
    raise KeyboardInterrupt(f"signal {signum}")


if threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
    signal.signal(signal.SIGTERM, _on_sigterm)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text[-lines:])


def wait_port(port: int, proc: subprocess.Popen, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise HarnessError(f"server exited with {proc.returncode} before listening on "
                               f"{port}; log:\n{_tail(log)}")
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise HarnessError(f"server not listening on port {port} after {timeout}s; log:\n{_tail(log)}")


def log_dir(name: str) -> Path:
    d = LOG_ROOT / name
    d.mkdir(parents=True, exist_ok=True)
    return d


# --------------------------------------------------------------------------------------------
# S3 clients and servers


def s3_client(endpoint: str, key: str, secret: str):
    session = boto3.session.Session(aws_access_key_id=key, aws_secret_access_key=secret,
                                    region_name=REGION)
    config = Config(s3={"addressing_style": "path"},
                    retries={"max_attempts": 3, "mode": "standard"},
                    connect_timeout=5, read_timeout=120, max_pool_connections=16,
                    request_checksum_calculation="when_required",
                    response_checksum_validation="when_required")
    return session.client("s3", endpoint_url=endpoint, config=config)


class _Server:
    name = "server"

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.workdir: Path | None = None
        self.log: Path | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _spawn(self, argv: list[str], env: dict[str, str], ready_timeout: float) -> None:
        self.log = log_dir("servers") / f"{self.name}-{self.port}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, env=env, cwd=self.workdir, stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        with _live_lock:
            _live_procs[self.proc.pid] = self.proc
        wait_port(self.port, self.proc, self.log, ready_timeout)

    def stop(self) -> None:
        if self.proc is not None:
            _stop_popen(self.proc)
            with _live_lock:
                _live_procs.pop(self.proc.pid, None)
            self.proc = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def assert_alive(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            raise HarnessError(f"{self.name} is not running; log:\n{_tail(self.log)}")


class MotoServer(_Server):
    """moto, through tools/lib/moto_server.py (moto's server with SigV4 checked against the
    request as sent; stock moto 5.2 refuses correctly signed requests whose query holds "/").

    auth=True: authentication enforced; self.key/self.secret belong to an admin IAM user made
    during the free actions, and start() checks that a wrong secret is refused.
    auth=False: moto accepts any credentials."""

    name = "moto"

    def __init__(self, auth: bool = True) -> None:
        super().__init__()
        self.auth = auth
        self.key = "testing"
        self.secret = "testing"
        if not auth:
            self.name = "moto-noauth"

    def start(self, ready_timeout: float = 30.0) -> "MotoServer":
        require("moto")
        self.workdir = Path(tempfile.mkdtemp(prefix="warmfs-moto-"))
        self.port = free_port()
        env = {"PATH": BASE_PATH, "HOME": str(self.workdir), "LANG": "C.UTF-8",
               "TMPDIR": str(self.workdir)}
        if self.auth:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = str(MOTO_FREE_ACTIONS)
        self._spawn([sys.executable, str(MOTO_WRAPPER), "-H", "127.0.0.1", "-p", str(self.port)],
                    env, ready_timeout)
        if not self.auth:
            self.client().list_buckets()
            return self
        # The free actions: exactly MOTO_FREE_ACTIONS requests, all IAM.
        session = boto3.session.Session(aws_access_key_id="bootstrap",
                                        aws_secret_access_key="bootstrap", region_name=REGION)
        iam = session.client("iam", endpoint_url=self.endpoint)
        iam.create_user(UserName="warmfs-tests")
        iam.put_user_policy(UserName="warmfs-tests", PolicyName="admin", PolicyDocument=json.dumps(
            {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        access = iam.create_access_key(UserName="warmfs-tests")["AccessKey"]
        self.key, self.secret = access["AccessKeyId"], access["SecretAccessKey"]
        self.client().list_buckets()
        try:
            self.client(secret="wrong-" + self.secret).list_buckets()
        except botocore.exceptions.ClientError as e:
            code = e.response["Error"]["Code"]
            if code != "SignatureDoesNotMatch":
                raise HarnessError(f"moto refused a wrong secret with {code}, "
                                   "expected SignatureDoesNotMatch") from e
        else:
            raise HarnessError("moto accepted a wrong secret: authentication is not enforced")
        return self

    def client(self, key: str | None = None, secret: str | None = None):
        return s3_client(self.endpoint, key or self.key, secret or self.secret)


class S3rver(_Server):
    """s3rver 3.7.1 (Node). Known quirks: folders holding only subfolders are dropped from
    listings, PUT is answered before the data is on disk (use put_object() here, which waits),
    and it accepts a wrong secret. Truncated listings work only with the legacy OpenSSL provider,
    which start() turns on."""

    name = "s3rver"
    key = S3RVER_KEY
    secret = S3RVER_SECRET

    def start(self, ready_timeout: float = 30.0) -> "S3rver":
        require("s3rver")
        self.workdir = Path(tempfile.mkdtemp(prefix="warmfs-s3rver-"))
        (self.workdir / "data").mkdir()
        self.port = free_port()
        env = {"PATH": BASE_PATH, "HOME": str(self.workdir), "LANG": "C.UTF-8"}
        # --openssl-legacy-provider: s3rver makes continuation tokens with DES, which OpenSSL 3
        # only has in its legacy provider; without it every truncated listing (max-keys=1, or
        # more than a page) answers 500 on Node 17+.
        self._spawn([shutil.which("node", path=BASE_PATH), "--openssl-legacy-provider",
                     str(S3RVER_JS),
                     "-d", str(self.workdir / "data"), "-a", "127.0.0.1", "-p", str(self.port),
                     *([] if os.environ.get("WARMFS_TEST_VERBOSE_SERVERS") else ["--silent"])],
                    env, ready_timeout)
        deadline = time.monotonic() + ready_timeout
        while True:
            try:
                self.client().list_buckets()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        return self

    def client(self, key: str | None = None, secret: str | None = None):
        return s3_client(self.endpoint, key or self.key, secret or self.secret)


class S3Proxy(_Server):
    """tools/s3proxy in front of `upstream`, on ports it picks (read from its port files). As
    a server for mount it has the upstream's credentials and its own endpoint."""

    name = "s3proxy"
    _counter = 0

    def __init__(self, upstream: _Server, args: list[str] = ()) -> None:
        super().__init__()
        self.upstream = upstream
        self.key, self.secret = upstream.key, upstream.secret
        self.args = list(args)
        self.control_port = 0

    def start(self, ready_timeout: float = 15.0) -> "S3Proxy":
        S3Proxy._counter += 1
        self.workdir = Path(tempfile.mkdtemp(prefix="warmfs-s3proxy-"))
        port_file, control_file = self.workdir / "port", self.workdir / "control-port"
        self.log = log_dir("servers") / f"s3proxy-{S3Proxy._counter:02d}.log"
        argv = [str(PROXY), "--listen", "127.0.0.1:0",
                "--upstream", f"127.0.0.1:{self.upstream.port}", "--port-file", str(port_file),
                "--control-port-file", str(control_file), "--seed", "1", "--verbose",
                *self.args]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, env={"PATH": BASE_PATH, "LANG": "C.UTF-8"},
                                         stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        with _live_lock:
            _live_procs[self.proc.pid] = self.proc
        deadline = time.monotonic() + ready_timeout
        while not (port_file.exists() and control_file.exists()):
            if self.proc.poll() is not None:
                raise HarnessError(f"s3proxy exited with {self.proc.returncode}; log:\n"
                                           f"{_tail(self.log)}")
            if time.monotonic() > deadline:
                raise HarnessError(f"s3proxy wrote no port files in {ready_timeout}s")
            time.sleep(0.02)
        self.port = int(port_file.read_text())
        self.control_port = int(control_file.read_text())
        return self

    def _control(self, method: str, path: str, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.control_port}{path}", data=data,
                                     method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            raise AssertionError(f"s3proxy {method} {path}: {e.code} {e.read()!r}") from None

    def set_faults(self, specs: list[str]) -> None:
        self._control("POST", "/faults", specs)

    def clear_faults(self) -> None:
        self._control("DELETE", "/faults")

    def stats(self) -> dict:
        return self._control("GET", "/stats")

    def injected(self) -> dict[str, int]:
        return {f["spec"]: f["injected"] for f in self.stats()["faults"]}


def start_server(case_or_module_cleanup, server: _Server) -> _Server:
    """Start `server` and register its stop with addCleanup/addModuleCleanup first, so a failed
    start is cleaned up too."""
    case_or_module_cleanup(server.stop)
    server.start()
    return server


# --------------------------------------------------------------------------------------------
# Data and uploads


def make_data(size: int, seed: int) -> bytes:
    """Reproducible bytes for size up to 64 MiB; os.urandom above that (faster, and the test keeps
    the bytes to compare anyway)."""
    if size > 64 * MiB:
        return os.urandom(size)
    rng = random.Random(seed)
    return b"".join(rng.randbytes(min(MiB, size - off)) for off in range(0, size, MiB))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_TRANSFER = TransferConfig(multipart_threshold=64 * MiB, multipart_chunksize=16 * MiB,
                           max_concurrency=4, use_threads=True)


def put_object(client, bucket: str, key: str, data: bytes, timeout: float = 30.0) -> None:
    """Upload and wait until the server returns exactly these bytes' size and MD5 (s3rver answers
    PUT before the data is on disk)."""
    import io
    if len(data) >= 64 * MiB:
        client.upload_fileobj(io.BytesIO(data), bucket, key, Config=_TRANSFER)
    else:
        client.put_object(Bucket=bucket, Key=key, Body=data)
    md5 = hashlib.md5(data).hexdigest()
    deadline = time.monotonic() + timeout
    while True:
        head = client.head_object(Bucket=bucket, Key=key)
        etag = head["ETag"].strip('"')
        if head["ContentLength"] == len(data) and (etag == md5 or "-" in etag):
            if len(data) == 0:
                return
            tail_start = max(0, len(data) - 4096)
            got = client.get_object(Bucket=bucket, Key=key,
                                    Range=f"bytes={tail_start}-")["Body"].read()
            if got == data[tail_start:]:
                return
        if time.monotonic() > deadline:
            raise HarnessError(f"{bucket}/{key}: server never showed the uploaded bytes "
                               f"(size {head['ContentLength']} vs {len(data)}, etag {etag})")
        time.sleep(0.1)


def put_many(client, bucket: str, objects: dict[str, bytes], threads: int = 8) -> None:
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(threads) as pool:
        for f in [pool.submit(put_object, client, bucket, k, v) for k, v in objects.items()]:
            f.result()


def list_keys(client, bucket: str, prefix: str = "") -> list[str]:
    keys = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return keys


def create_bucket(client, bucket: str) -> None:
    client.create_bucket(Bucket=bucket)


# --------------------------------------------------------------------------------------------
# The model of how keys become paths (the contract): used to compute expected trees.


def valid_key_parts(key: str) -> list[str] | None:
    """Path segments of a key, or None when warmfs must skip it. A trailing '/' is a dir marker."""
    body = key[:-1] if key.endswith("/") else key
    if body == "":
        return None
    parts = body.split("/")
    for p in parts:
        if p in ("", ".", "..") or len(p.encode()) > 255:
            return None
    return parts


def expected_tree(keys: dict[str, int], prefix: str = "") -> dict[str, tuple]:
    """{relative path: ("f", size) | ("d",)} for keys under prefix (a prefix ending in '/')."""
    tree: dict[str, tuple] = {}
    for key, size in keys.items():
        if not key.startswith(prefix):
            continue
        rel = key[len(prefix):]
        parts = valid_key_parts(rel)
        if parts is None:
            continue
        dirs = parts if rel.endswith("/") else parts[:-1]
        for i in range(1, len(dirs) + 1):
            tree["/".join(dirs[:i])] = ("d",)
        if not rel.endswith("/"):
            tree["/".join(parts)] = ("f", size)
    return tree


def walk_tree(root: Path) -> dict[str, tuple]:
    """What the mount shows, in expected_tree's format (os.walk: readdir + stat)."""
    tree: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            p = Path(dirpath, d)
            tree[str(p.relative_to(root))] = ("d",)
        for f in filenames:
            p = Path(dirpath, f)
            tree[str(p.relative_to(root))] = ("f", os.stat(p).st_size)
    return tree


# --------------------------------------------------------------------------------------------
# Running the CLI


@dataclasses.dataclass
class Run:
    argv: list[str]
    rc: int
    stdout: str
    stderr: str
    seconds: float

    def describe(self) -> str:
        return (f"$ {' '.join(self.argv)}\nexit {self.rc} after {self.seconds:.2f}s\n"
                f"stdout: {self.stdout!r}\nstderr: {self.stderr!r}")


# Sanitizer builds (tools/test --sanitize): the options the harness was given reach every
# warmfs process, with reports written to files in SANITIZER_DIR (a daemon's stderr goes
# nowhere), one per process ("report.<pid>"). WarmfsTestCase fails a test during which a
# report appeared; run_integration.py counts a failure for each report no test claimed
# (from a class fixture's mount, say).
SANITIZER_OPTIONS = ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS")
SANITIZER_DIR = LOG_ROOT / "sanitizer"
_claimed_reports: set[str] = set()


def sanitizer_env() -> dict[str, str]:
    env = {}
    for name in SANITIZER_OPTIONS:
        if os.environ.get(name):
            SANITIZER_DIR.mkdir(parents=True, exist_ok=True)
            env[name] = f"{os.environ[name]}:log_path={SANITIZER_DIR / 'report'}"
    return env


def sanitizer_reports() -> set[str]:
    return {str(p) for p in SANITIZER_DIR.glob("report.*")} if SANITIZER_DIR.is_dir() else set()


def claim_sanitizer_reports(before: set[str] = frozenset()) -> list[Path]:
    """Report files that are neither in `before` nor claimed yet; claims them."""
    found = sorted(sanitizer_reports() - before - _claimed_reports)
    _claimed_reports.update(found)
    return [Path(p) for p in found]


def base_env(home: Path, key: str | None = None, secret: str | None = None,
             extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a warmfs process: nothing inherited but sanitizer options."""
    env = {"PATH": BASE_PATH, "HOME": str(home), "LANG": "C.UTF-8", "TMPDIR": "/tmp",
           "AWS_EC2_METADATA_DISABLED": "true",
           "AWS_CONFIG_FILE": str(home / ".aws" / "config"),
           "AWS_SHARED_CREDENTIALS_FILE": str(home / ".aws" / "credentials"),
           **sanitizer_env()}
    if key is not None:
        env["AWS_ACCESS_KEY_ID"] = key
    if secret is not None:
        env["AWS_SECRET_ACCESS_KEY"] = secret
    env.update(extra or {})
    return env


def run_cli(args: list[str], env: dict[str, str], timeout: float = 30.0) -> Run:
    """Run warmfs with stdout/stderr in files, so a daemon that keeps them open cannot block us."""
    argv = [str(WARMFS)] + [str(a) for a in args]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                cwd="/")
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = None
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        run = Run(argv, -999 if rc is None else rc, out.read().decode(errors="replace"),
                  err.read().decode(errors="replace"), seconds)
    if rc is None:
        raise AssertionError(f"warmfs did not exit within {timeout}s\n{run.describe()}")
    return run


# --------------------------------------------------------------------------------------------
# Mounts


def _unescape_mount_field(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and len(s[i + 1:i + 4]) == 3 and s[i + 1:i + 4].isdigit():
            out.append(chr(int(s[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def mounts_at(path: Path | str) -> list[str]:
    """Lines of /proc/mounts whose mount point is path."""
    target = os.path.realpath(path)
    with open("/proc/mounts", encoding="utf-8", errors="surrogateescape") as f:
        return [line.strip() for line in f
                if len(line.split()) > 1 and _unescape_mount_field(line.split()[1]) == target]


def is_mounted(path: Path | str) -> bool:
    return bool(mounts_at(path))


def daemon_pids(mountpoint: Path | str) -> list[int]:
    """PIDs of warmfs processes whose command line names this mount point."""
    target = str(mountpoint)
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        names = [a.decode(errors="replace") for a in argv if a]
        if names and os.path.basename(names[0]) == "warmfs" and target in names:
            if _state(int(entry)) not in (None, "Z"):
                pids.append(int(entry))
    return pids


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def pid_alive(pid: int) -> bool:
    return _state(pid) not in (None, "Z")


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in pids if pid_alive(p)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def wait_unmounted(path: Path | str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while is_mounted(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def force_unmount(path: Path | str) -> None:
    """fusermount3 -u, then umount -l; never raises."""
    for argv in (["fusermount3", "-u", str(path)], ["fusermount3", "-uz", str(path)],
                 ["umount", "-l", str(path)]):
        if not is_mounted(path):
            return
        with contextlib.suppress(Exception):
            subprocess.run(argv, env={"PATH": BASE_PATH}, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=15)


def read_uncached(path: Path | str, block: int = MiB) -> bytes:
    """The whole file, read in blocks with the kernel's page cache of it dropped first, so that
    a file read again reaches warmfs."""
    with open(path, "rb", buffering=0) as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        parts = []
        while b := f.read(block):
            parts.append(b)
    return b"".join(parts)


def temp_dir(cleanup, prefix: str = "warmfs-it-", subdirs: tuple[str, ...] = (),
             mounts: tuple[str, ...] = ()) -> Path:
    """A fresh directory with `subdirs` made in it, removed with everything in it by `cleanup`
    (a test's addCleanup): its `mounts` (subdirectories something may have mounted on) are
    unmounted first, and the tree is kept if one stays mounted (never delete through a mount)."""
    d = Path(tempfile.mkdtemp(prefix=prefix))

    def remove():
        for sub in mounts:
            force_unmount(d / sub)
        if not any(is_mounted(d / sub) for sub in mounts):
            shutil.rmtree(d, ignore_errors=True)
    cleanup(remove)
    for sub in subdirs:
        (d / sub).mkdir()
    return d


class Mount:
    """A warmfs mount of `url` in a fresh temp dir. Use start(); close() always cleans up."""

    _counter = 0

    def __init__(self, server: _Server, url: str, *, args: list[str] = (), key: str | None = None,
                 secret: str | None = None, env_extra: dict[str, str] | None = None,
                 name: str = "mount", credentials: bool = True, timeout: float = 30.0):
        Mount._counter += 1
        self.server = server
        self.url = url
        self.tmp = Path(tempfile.mkdtemp(prefix="warmfs-it-"))
        self.path = self.tmp / "mnt"
        self.path.mkdir()
        self.home = self.tmp / "home"
        self.home.mkdir()
        self.log = log_dir("mounts") / f"{Mount._counter:03d}-{name}.log"
        self.args = ["mount", url, str(self.path), "--endpoint", server.endpoint,
                     "--region", REGION, "--path-style", "--log-file", str(self.log),
                     "--log-level", "debug", *args]
        if credentials:
            key = key if key is not None else server.key
            secret = secret if secret is not None else server.secret
        self.env = base_env(self.home, key, secret, env_extra)
        self.timeout = timeout
        self.pids: list[int] = []
        self.run: Run | None = None

    def start(self) -> "Mount":
        with _live_lock:
            _live_mounts.append(self)
        self.run = run_cli(self.args, self.env, timeout=self.timeout)
        self.pids = daemon_pids(self.path)
        if self.run.rc != 0:
            raise AssertionError(f"warmfs mount failed\n{self.run.describe()}\n{self.log_tail()}")
        if not is_mounted(self.path):
            raise AssertionError(f"warmfs mount exited 0 but {self.path} is not in /proc/mounts"
                                 f"\n{self.run.describe()}\n{self.log_tail()}")
        return self

    def log_tail(self, lines: int = 20) -> str:
        return f"warmfs log {self.log} (last {lines} lines):\n{_tail(self.log, lines)}"

    def kill_daemon(self, sig: int = signal.SIGKILL) -> None:
        for pid in self.pids or daemon_pids(self.path):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def close(self) -> None:
        pids = list(set(self.pids + daemon_pids(self.path)))
        force_unmount(self.path)
        alive = wait_gone(pids, 5.0)
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_gone(alive, 5.0)
        if not is_mounted(self.path):
            shutil.rmtree(self.tmp, ignore_errors=True)
        else:
            print(f"harness: WARNING {self.path} is still mounted", file=sys.stderr)
        with _live_lock:
            if self in _live_mounts:
                _live_mounts.remove(self)

    def stats(self) -> dict:
        run = run_cli(["stats", str(self.path), "--json"], self.env, timeout=15)
        if run.rc != 0:
            raise AssertionError(f"warmfs stats failed\n{run.describe()}")
        try:
            return json.loads(run.stdout)
        except ValueError as e:
            raise AssertionError(f"warmfs stats --json printed no JSON\n{run.describe()}") from e


def mount(cleanup, server: _Server, url: str, **kw) -> Mount:
    """Mount with close() registered on `cleanup` (addCleanup / addClassCleanup /
    addModuleCleanup) before it starts, so a failed mount is cleaned up too."""
    m = Mount(server, url, **kw)
    cleanup(m.close)
    return m.start()


def warmfs_processes() -> list[int]:
    """Every live process running the warmfs binary (the tests' own, none of anybody else's)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry}/exe") == str(WARMFS.resolve()) and \
                        pid_alive(int(entry)):
                    pids.append(int(entry))
    return pids


# --------------------------------------------------------------------------------------------
# Test case base with a watchdog


class WarmfsTestCase(unittest.TestCase):
    """Each test gets `timeout` seconds; past that the watchdog kills the harness's warmfs
    daemons so a hung FUSE call fails (ENOTCONN) instead of blocking the suite."""

    timeout = 90.0

    def setUp(self) -> None:
        super().setUp()
        # First registered, so it runs last: after the test's own mounts are closed.
        self._reports_before = sanitizer_reports()
        self.addCleanup(self._check_sanitizer_reports)
        self._watchdog = threading.Timer(self.timeout, self._fire)
        self._watchdog.daemon = True
        self._watchdog.start()
        self.addCleanup(self._watchdog.cancel)

    def _check_sanitizer_reports(self) -> None:
        reports = claim_sanitizer_reports(self._reports_before)
        if reports:
            text = "\n".join(f"--- {p}\n{_tail(p, 60)}" for p in reports)
            self.fail(f"{len(reports)} sanitizer report(s) from warmfs during this test:\n{text}")

    def _fire(self) -> None:
        with _live_lock:
            mounts = list(_live_mounts)
        print(f"\nwatchdog: {self.id()} exceeded {self.timeout}s; killing warmfs daemons of "
              f"{len(mounts)} mount(s)", file=sys.stderr, flush=True)
        for m in mounts:
            m.kill_daemon()

    def assert_refused(self, run: Run, mnt: Path | str, within: float) -> list[str]:
        """A mount that must be refused: no mount and no daemon left (a child on its way out
        gets 10 s, then is killed), a non-zero exit within `within` seconds, and exactly one
        line of output, which it returns."""
        leftovers = wait_gone(daemon_pids(mnt), 10)
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.assertFalse(is_mounted(mnt), f"a mount was left\n{run.describe()}")
        self.assertEqual(leftovers, [], f"a daemon was left running\n{run.describe()}")
        self.assertNotEqual(run.rc, 0, run.describe())
        self.assertLess(run.seconds, within, run.describe())
        lines = [line for line in (run.stdout + run.stderr).splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, f"want exactly one line\n{run.describe()}")
        return lines

    def mount(self, server: _Server, url: str, **kw) -> Mount:
        return mount(self.addCleanup, server, url, name=self._testMethodName, **kw)
