"""The credential chain against moto with authentication on: web identity and profile roles
through moto's STS, credential_process, and loopback IMDSv2 and container endpoints
(tools/lib/credential_server.py) whose credentials expire within seconds, so that a mount lives
through several refreshes, and then through an endpoint that breaks.

Nothing here reaches beyond loopback: every mount's environment sets AWS_EC2_METADATA_DISABLED or
points AWS_EC2_METADATA_SERVICE_ENDPOINT at the loopback server. Bucket state is checked with
boto3.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
import time
import unittest
from pathlib import Path

import boto3

import harness
import prometheus

sys.path.insert(0, str(harness.REPO / "tools" / "lib"))
from credential_server import CredentialServer  # noqa: E402

MOTO: harness.MotoServer
ROLE_ARN = ""
BUCKET = "creds"
BIG_KEY = "big.bin"
BIG = harness.make_data(24 * harness.MiB, 7)
SMALL = {f"small/{i:02d}.txt": f"small {i}\n".encode() * 100 for i in range(40)}


def _session(key=None, secret=None, token=None):
    return boto3.session.Session(aws_access_key_id=key or MOTO.key,
                                 aws_secret_access_key=secret or MOTO.secret,
                                 aws_session_token=token, region_name=harness.REGION)


def setUpModule():
    prometheus.require_promtool()
    harness.require("warmfs", "fuse", "moto")
    global MOTO, ROLE_ARN
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    iam = _session().client("iam", endpoint_url=MOTO.endpoint)
    trust = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": "*", "Federated": "*"},
        "Action": ["sts:AssumeRole", "sts:AssumeRoleWithWebIdentity"]}]}
    role = iam.create_role(RoleName="warmfs-reader", AssumeRolePolicyDocument=json.dumps(trust))
    iam.put_role_policy(RoleName="warmfs-reader", PolicyName="all", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    ROLE_ARN = role["Role"]["Arn"]
    c = MOTO.client()
    harness.create_bucket(c, BUCKET)
    harness.put_object(c, BUCKET, BIG_KEY, BIG)
    harness.put_many(c, BUCKET, SMALL)


def sts_client():
    return _session().client("sts", endpoint_url=MOTO.endpoint)


def env_no_keys(**extra) -> dict[str, str]:
    """Variables for a mount with no static keys; STS at moto."""
    return {"AWS_ENDPOINT_URL_STS": MOTO.endpoint, **extra}


class CredentialsCase(harness.WarmfsTestCase):
    timeout = 150.0

    def new_mount(self, env_extra: dict[str, str], args: list[str] = (), name: str = "",
                  before_start=None) -> harness.Mount:
        m = harness.Mount(MOTO, f"s3://{BUCKET}", credentials=False, env_extra=env_extra,
                          args=list(args), name=name or self._testMethodName)
        self.addCleanup(m.close)
        if before_start is not None:
            before_start(m)
        return m.start()

    def refused(self, env_extra: dict[str, str], before=None) -> harness.Run:
        m = harness.Mount(MOTO, f"s3://{BUCKET}", credentials=False, env_extra=env_extra,
                          name=self._testMethodName)
        self.addCleanup(m.close)
        if before is not None:
            before(m)
        run = harness.run_cli(m.args, m.env, timeout=30)
        self.assertEqual(run.rc, 1, run.describe())
        self.assertFalse(harness.is_mounted(m.path))
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, run.describe())
        return run

    def credential_server(self, lifetime: float) -> CredentialServer:
        server = CredentialServer(sts_client(), ROLE_ARN, lifetime=lifetime).start()
        self.addCleanup(server.stop)
        return server

    def write_and_check(self, m: harness.Mount, key: str) -> None:
        data = os.urandom(300 * 1024)
        (m.path / key).write_bytes(data)
        deadline = time.monotonic() + 30
        while True:
            try:
                got = MOTO.client().get_object(Bucket=BUCKET, Key=key)["Body"].read()
                if got == data:
                    return
            except Exception:
                pass
            self.assertLess(time.monotonic(), deadline, f"{key} never reached the bucket")
            time.sleep(0.2)


class Sources(CredentialsCase):
    def test_web_identity_mount_reads_and_writes(self):
        home_token = Path(self.id().replace(".", "_"))
        token_dir = harness.log_dir("credentials")
        token_file = token_dir / f"{home_token.name}.token"
        token_file.write_text("eyJhbGciOiJSUzI1NiJ9.test-web-identity-token\n")
        m = self.new_mount(env_no_keys(AWS_WEB_IDENTITY_TOKEN_FILE=str(token_file),
                                       AWS_ROLE_ARN=ROLE_ARN, AWS_ROLE_SESSION_NAME="warmfs-it"))
        self.assertEqual(harness.sha256((m.path / BIG_KEY).read_bytes()), harness.sha256(BIG))
        self.write_and_check(m, "written-web-identity.bin")
        st = m.stats()["credentials"]
        self.assertEqual(st["source"], "web-identity")
        self.assertIsNotNone(st["expires_at"])
        self.assertNotIn(MOTO.secret, json.dumps(st))
        text = harness.run_cli(["stats", str(m.path)], m.env)
        self.assertIn("credentials         web-identity, expire at", text.stdout)

    def test_profile_role_with_source_profile(self):
        def files(m):
            (m.home / ".aws").mkdir(exist_ok=True)
            (m.home / ".aws" / "credentials").write_text(
                f"[base]\naws_access_key_id = {MOTO.key}\naws_secret_access_key = {MOTO.secret}\n")
            (m.home / ".aws" / "config").write_text(
                f"[profile reader]\nrole_arn = {ROLE_ARN}\nsource_profile = base\n"
                f"role_session_name = warmfs-profile\nduration_seconds = 900\n")
        m = self.new_mount(env_no_keys(), args=["--profile", "reader"], before_start=files)
        self.assertEqual(sorted(os.listdir(m.path / "small")), sorted(k[6:] for k in SMALL))
        st = m.stats()["credentials"]
        self.assertEqual(st["source"], "assume-role")
        self.assertIn(ROLE_ARN, st["origin"])
        self.write_and_check(m, "written-assume-role.bin")

    def test_credential_process(self):
        c = sts_client().assume_role(RoleArn=ROLE_ARN, RoleSessionName="warmfs-process",
                                     DurationSeconds=900)["Credentials"]
        doc = {"Version": 1, "AccessKeyId": c["AccessKeyId"],
               "SecretAccessKey": c["SecretAccessKey"], "SessionToken": c["SessionToken"],
               "Expiration": c["Expiration"].strftime("%Y-%m-%dT%H:%M:%SZ")}

        def files(m):
            script = m.home / "creds.py"
            script.write_text("import sys\nsys.stderr.write('creds.py: handing out a role\\n')\n"
                              f"print({json.dumps(json.dumps(doc))})\n")
            (m.home / ".aws").mkdir(exist_ok=True)
            (m.home / ".aws" / "config").write_text(
                f"[default]\ncredential_process = {sys.executable} '{script}' --flag\n")
        m = self.new_mount(env_no_keys(), before_start=files)
        self.assertEqual((m.path / "small" / "03.txt").read_bytes(), SMALL["small/03.txt"])
        st = m.stats()["credentials"]
        self.assertEqual(st["source"], "credential-process")
        self.assertIn("creds.py: handing out a role", m.log.read_text())

    def test_failing_sts_is_one_line_and_no_mount(self):
        fake_sts = self.credential_server(lifetime=5)
        token_file = harness.log_dir("credentials") / "refused.token"
        token_file.write_text("not-a-valid-token")
        run = self.refused(env_no_keys(AWS_ENDPOINT_URL_STS=fake_sts.endpoint,
                                       AWS_WEB_IDENTITY_TOKEN_FILE=str(token_file),
                                       AWS_ROLE_ARN=ROLE_ARN))
        self.assertIn(f"warmfs: credentials: web-identity ({ROLE_ARN}): AssumeRoleWithWebIdentity "
                      f"at {fake_sts.endpoint}: 403 InvalidIdentityToken: ", run.stderr)

    def test_sso_profile_is_refused(self):
        def files(m):
            (m.home / ".aws").mkdir(exist_ok=True)
            (m.home / ".aws" / "config").write_text(
                "[default]\nsso_start_url = https://example.awsapps.com/start\nsso_region = us-east-1\n")
        run = self.refused(env_no_keys(), before=files)
        self.assertIn("SSO profiles", run.stderr)

    def test_nothing_found_is_unsigned_and_says_so(self):
        m = harness.Mount(MOTO, f"s3://{BUCKET}", credentials=False, env_extra={},
                          name=self._testMethodName)
        self.addCleanup(m.close)
        run = harness.run_cli(m.args, m.env, timeout=30)
        # moto with authentication refuses unsigned requests: the check before mounting says so.
        self.assertEqual(run.rc, 1, run.describe())
        self.assertIn("cannot list", run.stderr)
        self.assertIn("requests are sent unsigned", m.log.read_text() if m.log.exists() else
                      run.stderr)


def paced_read(path: Path, piece: int, pause: float) -> bytes:
    out = bytearray()
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(piece)
            if not b:
                return bytes(out)
            out += b
            time.sleep(pause)


class Refresh(CredentialsCase):
    def test_imds_credentials_refresh_under_a_long_read(self):
        server = self.credential_server(lifetime=8)
        metrics_port = harness.free_port()
        # The bucket behind a 10 Mbit/s proxy: one pass over 24 MiB takes about 20 s, its GETs
        # spread over it, while the credentials are replaced every 4 s.
        proxy = harness.start_server(self.addCleanup, harness.S3Proxy(
            MOTO, ["--bandwidth-mbps", "10", "--bandwidth-scope", "total"]))
        m = harness.Mount(proxy, f"s3://{BUCKET}", credentials=False,
                          env_extra={"AWS_EC2_METADATA_DISABLED": "false",
                                     "AWS_EC2_METADATA_SERVICE_ENDPOINT": server.endpoint},
                          args=["--memory-cache-size", "16M", "--read-only",
                                "--metrics-listen", f"127.0.0.1:{metrics_port}"],
                          name=self._testMethodName)
        self.addCleanup(m.close)
        m.start()
        self.assertIn("PUT /latest/api/token", server.requests)
        start = m.stats()
        self.assertEqual(start["credentials"]["source"], "imds")
        result: dict[str, object] = {}

        def read():
            try:
                result["sha"] = harness.sha256(paced_read(m.path / BIG_KEY, 1024 * 1024, 0.05))
            except OSError as e:
                result["error"] = e
        reader = threading.Thread(target=read)
        reader.start()
        samples = []  # (refreshes, GETs) while the read runs
        while reader.is_alive():
            st = m.stats()
            samples.append((st["credentials"]["refreshes"], st["bucket_requests"]["get"]))
            reader.join(1.0)
        end = m.stats()
        self.assertNotIn("error", result)
        self.assertEqual(result["sha"], harness.sha256(BIG))
        refreshes = end["credentials"]["refreshes"]
        gets = end["bucket_requests"]["get"] - start["bucket_requests"]["get"]
        print(f"\nimds: {refreshes} refreshes during a {len(samples)} s read, "
              f"{end['read_errors']} read errors, {gets} GETs, "
              f"{end['credentials']['refresh_failures']} failed refreshes; "
              f"(refreshes, GETs) each second: {samples}", file=sys.stderr)
        self.assertGreaterEqual(refreshes, 3)
        self.assertEqual(end["read_errors"], 0)
        self.assertEqual(end["bucket_errors"], start["bucket_errors"])
        self.assertEqual(end["credentials"]["refresh_failures"], 0)
        # GETs signed with credentials fetched since the third refresh: the file's first 2 MiB
        # again, out of the 16M memory tier after 24 MiB and dropped from the page cache, so
        # read from the bucket now. (When the long read sent its own GETs is up to the request
        # sizing: all of them may have gone out before that refresh.)
        with open(m.path / BIG_KEY, "rb") as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            head = f.read(2 * 1024 * 1024)
        self.assertEqual(head, BIG[:2 * 1024 * 1024])
        again = m.stats()
        self.assertGreater(again["bucket_requests"]["get"], end["bucket_requests"]["get"], samples)
        self.assertEqual(again["read_errors"], 0)
        self.assertNotIn(" 403", m.log.read_text())
        # Prometheus sees the same: the source, an expiry ahead, the refreshes (promtool passes).
        after = m.stats()["credentials"]
        metrics = prometheus.scrape(self, metrics_port)
        self.assertEqual(metrics.get("warmfs_credentials_info", source="imds"), 1)
        self.assertGreater(metrics.get("warmfs_credentials_expiry_timestamp_seconds"), time.time())
        self.assertGreaterEqual(metrics.get("warmfs_credentials_refreshes_total"), refreshes)
        self.assertLessEqual(metrics.get("warmfs_credentials_refreshes_total"),
                             m.stats()["credentials"]["refreshes"])
        self.assertGreaterEqual(metrics.get("warmfs_credentials_refreshes_total"), after["refreshes"])
        self.assertEqual(metrics.get("warmfs_credentials_refresh_failures_total"), 0)

    def test_container_endpoint_breaks_then_reads_fail_with_eacces(self):
        server = self.credential_server(lifetime=6)
        token_file = harness.log_dir("credentials") / "container.token"
        token_file.write_text(server.container_token)
        m = self.new_mount({"AWS_CONTAINER_CREDENTIALS_FULL_URI":
                            server.endpoint + "/container-credentials",
                            "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": str(token_file)},
                           args=["--read-only", "--metadata-ttl", "0"])
        self.assertEqual(m.stats()["credentials"]["source"], "container")
        keys = sorted(SMALL)
        # A first refresh goes through, so credentials are fresh when the endpoint breaks.
        deadline = time.monotonic() + 20
        while m.stats()["credentials"]["refreshes"] < 1:
            self.assertLess(time.monotonic(), deadline, "no refresh within 20 s")
            time.sleep(0.2)
        server.set_failing(True)
        broke = time.monotonic()
        self.assertEqual((m.path / keys[0]).read_bytes(), SMALL[keys[0]])  # still good
        failed_at = None
        for key in keys[1:]:
            t0 = time.monotonic()
            try:
                got = (m.path / key).read_bytes()
                self.assertEqual(got, SMALL[key])
            except OSError as e:
                self.assertEqual(e.errno, errno.EACCES, f"{key}: {e}")
                failed_at = time.monotonic()
            self.assertLess(time.monotonic() - t0, 5.0, f"{key}: a read hung")
            if failed_at is not None:
                break
            self.assertLess(time.monotonic() - broke, 15, "reads never failed after expiry")
            time.sleep(0.3)
        self.assertIsNotNone(failed_at, "reads never failed")
        # Not before the held credentials expired (6 s life, refreshed at about half).
        self.assertGreater(failed_at - broke, 0.5)
        st = m.stats()["credentials"]
        self.assertGreater(st["refresh_failures"], 0)
        self.assertIn("HTTP 500", st["last_error"])
        log = m.log.read_text()
        self.assertIn("refresh failed", log)
        self.assertIn("expired at", log)
        served, failed = server.counts()
        print(f"\ncontainer: failed {failed_at - broke:.1f} s after the endpoint broke; "
              f"{st['refresh_failures']} failed refreshes", file=sys.stderr)


class Serve(CredentialsCase):
    def test_serve_with_web_identity(self):
        token_file = harness.log_dir("credentials") / "serve.token"
        token_file.write_text("eyJhbGciOiJSUzI1NiJ9.serve-token")
        home = harness.temp_dir(self.addCleanup, "warmfs-cred-serve-")
        port = harness.free_port()
        log = harness.log_dir("servers") / f"warmfs-serve-creds-{port}.log"
        env = harness.base_env(home, extra=env_no_keys(AWS_WEB_IDENTITY_TOKEN_FILE=str(token_file),
                                                       AWS_ROLE_ARN=ROLE_ARN))
        argv = [str(harness.WARMFS), "serve", "--bucket", BUCKET, "--listen",
                f"127.0.0.1:{port}", "--endpoint", MOTO.endpoint, "--region", harness.REGION,
                "--path-style", "--cache-dir", str(home / "cache"), "--cache-size", "256M",
                "--memory-cache-size", "64M", "--insecure-no-token", "--log-level", "debug"]
        with open(log, "ab") as out:
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        with harness._live_lock:
            harness._live_procs[proc.pid] = proc
        self.addCleanup(harness._stop_popen, proc)
        harness.wait_port(port, proc, log, 30)
        url = f"http://127.0.0.1:{port}"
        m = harness.Mount(MOTO, f"s3://{BUCKET}", credentials=False,
                          env_extra=env_no_keys(AWS_WEB_IDENTITY_TOKEN_FILE=str(token_file),
                                                AWS_ROLE_ARN=ROLE_ARN),
                          args=["--cache-server", url, "--insecure-no-token", "--read-only"],
                          name=self._testMethodName)
        self.addCleanup(m.close)
        m.start()
        self.assertEqual(harness.sha256((m.path / BIG_KEY).read_bytes()), harness.sha256(BIG))
        run = harness.run_cli(["stats", "--server", url, "--json", "--insecure-no-token"],
                              harness.base_env(home), timeout=15)
        self.assertEqual(run.rc, 0, run.describe())
        stats = json.loads(run.stdout)
        self.assertEqual(stats["credentials"]["source"], "web-identity")
        self.assertIsNotNone(stats["credentials"]["expires_at"])
        self.assertGreater(stats["miss_bytes"], 0)  # the server read the bucket with them
        text = harness.run_cli(["stats", "--server", url, "--insecure-no-token"],
                               harness.base_env(home), timeout=15)
        self.assertIn("credentials         web-identity", text.stdout)


if __name__ == "__main__":
    unittest.main()
