"""The CLI contract: refused mounts (one `warmfs: ` line, exit 1, within seconds, nothing mounted
or left running), usage errors (exit 2), `warmfs stats --json`, and the three ways to unmount.
"""

import os
import re
import signal
import subprocess
import time
import unittest
from pathlib import Path

import harness

MOTO: harness.MotoServer
SMALL = harness.make_data(200 * 1024, 42)
REFUSE_WITHIN = 10.0  # seconds: "within a few seconds", with margin for a loaded 2-core machine


def setUpModule():
    harness.require("warmfs", "fuse", "moto")
    global MOTO
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    c = MOTO.client()
    harness.create_bucket(c, "cli")
    harness.put_many(c, "cli", {"small.bin": SMALL, "dir/a.txt": b"a\n"})


def _tempdir(case) -> Path:
    return harness.temp_dir(case.addCleanup, "warmfs-cli-", subdirs=("mnt", "home"),
                            mounts=("mnt",))


class RefusedMounts(harness.WarmfsTestCase):
    def refused(self, url, endpoint, key, secret, cause, extra=()):
        d = _tempdir(self)
        mnt, log = d / "mnt", d / "warmfs.log"
        run = harness.run_cli(["mount", url, mnt, "--endpoint", endpoint, "--region",
                               harness.REGION, "--path-style", "--log-file", log,
                               "--log-level", "debug", *extra],
                              harness.base_env(d / "home", key, secret), timeout=30)
        lines = self.assert_refused(run, mnt, REFUSE_WITHIN)
        self.assertEqual(run.rc, 1, run.describe())
        self.assertTrue(lines[0].startswith("warmfs: "), run.describe())
        self.assertRegex(lines[0], cause)
        self.assertEqual(os.listdir(mnt), [])
        if secret:
            logged = log.read_text(errors="replace") if log.exists() else ""
            self.assertNotIn(secret, run.stdout + run.stderr + logged, "the secret was printed")
        return lines[0]

    def test_wrong_secret(self):
        self.refused("s3://cli", MOTO.endpoint, MOTO.key, "wrong-secret-" + MOTO.secret[:8],
                     r"SignatureDoesNotMatch")

    def test_unknown_access_key(self):
        self.refused("s3://cli", MOTO.endpoint, "AKIAUNKNOWN000000000", "whatever-secret",
                     r"InvalidAccessKeyId")

    def test_missing_bucket(self):
        self.refused("s3://no-such-bucket-here", MOTO.endpoint, MOTO.key, MOTO.secret,
                     r"NoSuchBucket|no-such-bucket-here.*(404|not exist|not found)")

    def test_unreachable_endpoint(self):
        self.refused("s3://cli", "http://127.0.0.1:1", MOTO.key, MOTO.secret,
                     r"(?i)127\.0\.0\.1:1|connect|refused|unreachable")


class Endpoints(harness.WarmfsTestCase):
    def test_ip_and_localhost_endpoints_are_path_style_without_being_told(self):
        # As in the AWS SDKs: BUCKET.127.0.0.1 cannot resolve, so an IP or localhost endpoint
        # is addressed path-style whether or not --path-style is given.
        port = MOTO.endpoint.rsplit(":", 1)[1]
        for host in ["127.0.0.1", "localhost"]:
            with self.subTest(host=host):
                m = harness.Mount(MOTO, "s3://cli", name=f"auto-path-style-{host}")
                self.addCleanup(m.close)
                m.args.remove("--path-style")
                i = m.args.index("--endpoint")
                m.args[i + 1] = f"http://{host}:{port}"
                m.start()
                self.assertEqual((m.path / "small.bin").read_bytes(), SMALL)
                m.close()


class MountHelperOptions(harness.WarmfsTestCase):
    def test_every_mount_flag_is_an_fstab_option(self):
        # mount(8)'s helper keeps its own list of warmfs mount's flags (src/cli/mount_options.cc):
        # each long flag `warmfs mount --help` shows must pass through it, so the two cannot
        # drift apart. -f prints the command it would run and mounts nothing.
        d = _tempdir(self)
        env = harness.base_env(d / "home")
        help_text = harness.run_cli(["mount", "--help"], env, timeout=15).stdout
        flags = re.findall(r"^\s+(?:-\w,)?--([a-z][a-z0-9-]+)(?: ([A-Z]{3,}\S*))?", help_text, re.M)
        self.assertGreater(len(flags), 20, help_text)
        helper = d / "mount.warmfs"
        helper.symlink_to(harness.WARMFS)
        for name, kind in flags:
            if name == "help":
                continue
            value = "" if not kind else ("=1" if "INT" in kind or name == "upload-threads"
                                              else "=x")
            with self.subTest(flag=name):
                run = subprocess.run([str(helper), "s3://cli", str(d / "mnt"), "-f", "-o",
                                      name.replace("-", "_") + value],
                                     env=env, capture_output=True, text=True, timeout=15)
                self.assertEqual(run.returncode, 0, run.stderr)
                self.assertIn(f"--{name}" if name not in ("uid", "gid") else f"--{name} 1",
                              run.stderr)
        self.assertFalse(harness.is_mounted(d / "mnt"))


class UsageErrors(harness.WarmfsTestCase):
    CASES = {
        "unknown option": ["--no-such-option"],
        "ttl not a number": ["--metadata-ttl", "abc"],
        "cache size malformed": ["--memory-cache-size", "lots"],
        "log level unknown": ["--log-level", "chatty"],
        "file mode not octal": ["--file-mode", "rw-r--r--"],
        "dir mode not octal": ["--dir-mode", "0999"],
        "uid not a number": ["--uid", "root"],
    }

    def test_usage_errors_exit_2(self):
        d = _tempdir(self)
        mnt = d / "mnt"
        env = harness.base_env(d / "home", "AKIAFAKE", "fake")
        base = ["mount", "s3://cli", mnt, "--endpoint", "http://127.0.0.1:1"]
        argvs = {name: base + extra for name, extra in self.CASES.items()}
        argvs.update({
            "unknown subcommand": ["frobnicate"],
            "unknown global option": ["--bogus"],
            "mount without mount point": ["mount", "s3://cli"],
            "source is not s3://": ["mount", "just-a-bucket", mnt, "--endpoint",
                                    "http://127.0.0.1:1"],
            "stats without mount point": ["stats"],
            "unmount without mount point": ["unmount"],
        })
        for name, argv in argvs.items():
            with self.subTest(case=name):
                run = harness.run_cli(argv, env, timeout=15)
                self.assertEqual(run.rc, 2, run.describe())
                self.assertLess(run.seconds, 5, run.describe())
                self.assertTrue(run.stderr.strip(), f"no message\n{run.describe()}")
                self.assertFalse(harness.is_mounted(mnt))

    def test_help_exits_0(self):
        d = _tempdir(self)
        run = harness.run_cli(["--help"], harness.base_env(d / "home"), timeout=15)
        self.assertEqual(run.rc, 0, run.describe())
        self.assertIn("mount", run.stdout)


class Stats(harness.WarmfsTestCase):
    KEYS = {"bytes_read", "memory_hit_bytes", "bucket_bytes_read", "bucket_requests",
            "read_latency_us"}

    def check_shape(self, s):
        self.assertEqual(self.KEYS - set(s), set(), f"missing keys in {s}")
        for k in ["bytes_read", "memory_hit_bytes", "bucket_bytes_read"]:
            self.assertIsInstance(s[k], int, k)
            self.assertGreaterEqual(s[k], 0, k)
        for k in ["get", "head", "list"]:
            self.assertIsInstance(s["bucket_requests"].get(k), int, f"bucket_requests.{k}")
        for k in ["p50", "p99"]:
            self.assertIsInstance(s["read_latency_us"].get(k), (int, float), f"read_latency_us.{k}")

    def test_json_and_cold_then_warm(self):
        m = self.mount(MOTO, "s3://cli")
        s0 = m.stats()
        self.check_shape(s0)
        path = m.path / "small.bin"
        self.assertEqual(path.read_bytes(), SMALL)
        s1 = m.stats()
        self.check_shape(s1)
        cold = s1["bucket_bytes_read"] - s0["bucket_bytes_read"]
        self.assertGreaterEqual(cold, len(SMALL), f"cold read: bucket_bytes_read {s0} -> {s1}")
        self.assertGreater(s1["bucket_requests"]["get"], s0["bucket_requests"]["get"])
        self.assertGreaterEqual(s1["bytes_read"] - s0["bytes_read"], len(SMALL))
        # Drop the kernel's page cache for this file so the re-read reaches warmfs.
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        self.assertEqual(path.read_bytes(), SMALL)
        s2 = m.stats()
        self.assertEqual(s2["bucket_bytes_read"], s1["bucket_bytes_read"],
                         f"warm re-read went to the bucket: {s1} -> {s2}")
        self.assertEqual(s2["bucket_requests"]["get"], s1["bucket_requests"]["get"])
        self.assertGreaterEqual(s2["bytes_read"] - s1["bytes_read"], len(SMALL))
        self.assertGreaterEqual(s2["memory_hit_bytes"] - s1["memory_hit_bytes"], len(SMALL),
                                f"warm re-read not served from the memory cache: {s1} -> {s2}")

    def test_human_readable(self):
        m = self.mount(MOTO, "s3://cli")
        (m.path / "dir/a.txt").read_bytes()
        run = harness.run_cli(["stats", m.path], m.env, timeout=15)
        self.assertEqual(run.rc, 0, run.describe())
        self.assertTrue(run.stdout.strip(), run.describe())


class Unmount(harness.WarmfsTestCase):
    def mounted(self):
        m = self.mount(MOTO, "s3://cli")
        self.assertEqual((m.path / "dir/a.txt").read_bytes(), b"a\n")
        pids = harness.daemon_pids(m.path)
        self.assertTrue(pids, "no warmfs daemon process names the mount point")
        return m, pids

    def assert_gone(self, m, pids, how):
        self.assertTrue(harness.wait_unmounted(m.path, 10), f"still mounted after {how}")
        self.assertEqual(harness.wait_gone(pids, 10), [], f"daemon still running after {how}")
        self.assertEqual(os.listdir(m.path), [])

    def test_second_mount_on_the_same_point_is_refused(self):
        m, pids = self.mounted()
        run = harness.run_cli(m.args, m.env, timeout=20)
        self.assertEqual(run.rc, 1, run.describe())
        lines = [line for line in (run.stdout + run.stderr).splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, run.describe())
        self.assertRegex(lines[0], r"^warmfs: .*already a warmfs mount")
        self.assertEqual(harness.daemon_pids(m.path), pids, "a second daemon serves the mount")
        self.assertEqual((m.path / "dir/a.txt").read_bytes(), b"a\n")

    def test_warmfs_unmount(self):
        m, pids = self.mounted()
        run = harness.run_cli(["unmount", m.path], m.env, timeout=20)
        self.assertEqual(run.rc, 0, run.describe())
        self.assert_gone(m, pids, "warmfs unmount")

    def test_sigterm(self):
        m, pids = self.mounted()
        for pid in pids:
            os.kill(pid, signal.SIGTERM)
        self.assert_gone(m, pids, "SIGTERM")

    def test_fusermount3(self):
        m, pids = self.mounted()
        run = subprocess.run(["fusermount3", "-u", str(m.path)], capture_output=True, timeout=20,
                             env={"PATH": harness.BASE_PATH})
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assert_gone(m, pids, "fusermount3 -u")

    def test_foreground_sigterm(self):
        d = _tempdir(self)
        mnt = d / "mnt"
        log = d / "fg.log"
        proc = subprocess.Popen(
            [str(harness.WARMFS), "mount", "s3://cli", str(mnt), "--endpoint", MOTO.endpoint,
             "--region", harness.REGION, "--path-style", "--foreground", "--log-file", str(log)],
            env=harness.base_env(d / "home", MOTO.key, MOTO.secret), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=open(d / "fg.stderr", "wb"))

        def stop():
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        self.addCleanup(stop)
        deadline = time.monotonic() + 15
        while not harness.is_mounted(mnt) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(harness.is_mounted(mnt), (d / "fg.stderr").read_text(errors="replace"))
        self.assertEqual((mnt / "dir/a.txt").read_bytes(), b"a\n")
        # A file still open at the stop: its handle is released by the daemon, not leaked (the
        # sanitizer pass reports a leak).
        held = open(mnt / "dir/a.txt", "rb")

        def close_held():
            try:
                held.close()
            except OSError:
                pass  # ENOTCONN: the mount it was open on is gone
        self.addCleanup(close_held)
        self.assertEqual(held.read(), b"a\n")
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(15), 0)
        self.assertFalse(harness.is_mounted(mnt))


if __name__ == "__main__":
    unittest.main()
