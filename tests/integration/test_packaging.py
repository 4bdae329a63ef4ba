"""warmfs installed like system software: systemd's readiness protocol, the Debian package, and
mounts through mount(8) and fstab.

- Notify: `warmfs mount --foreground` and `warmfs serve` with NOTIFY_SOCKET set to a unix
  datagram socket this test listens on, as systemd does for a Type=notify unit: READY=1 arrives
  only once the mount answers a stat (or the server accepts connections), STOPPING=1 on
  SIGTERM, and the process then exits 0 with nothing left mounted.
- DebianPackage: tools/build-deb builds the .deb once for the class (minutes), its file list
  and lintian (no errors); dpkg -i installs it; fstab lines of type warmfs and fuse.warmfs
  mount with `mount -T FSTAB DIR` (options translated: uid/gid, ro, mount -o ro, credentials-file,
  an unknown option's one-line error) and `umount` ends the daemon; dpkg -r removes it all,
  /sbin/mount.warmfs included.

Servers: moto with authentication on. Every mount is unmounted and every process stopped in
cleanup, also when a test fails; the package is removed in the class cleanup. A missing tool
(dpkg-deb, lintian, mount) fails the tests, never skips them.
"""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import unittest
from pathlib import Path

import harness

MOTO: harness.MotoServer
BUCKET = "pkg"
DATA = harness.make_data(300 * 1024, 7)
FILES = {"train/a.bin": DATA, "train/b.txt": b"hello\n", "top.txt": b"top\n"}


def setUpModule():
    harness.require("warmfs", "fuse", "moto")
    global MOTO
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    c = MOTO.client()
    harness.create_bucket(c, BUCKET)
    harness.put_many(c, BUCKET, FILES)


def _tempdir(case, prefix: str) -> Path:
    return harness.temp_dir(case.addCleanup, prefix, subdirs=("mnt", "home"),
                            mounts=("mnt", "mnt2"))


def _start(case, argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """A foreground warmfs process, stopped (SIGKILL at worst) in cleanup."""
    with open(log, "ab") as out:
        proc = subprocess.Popen([str(a) for a in argv], env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                cwd="/")
    with harness._live_lock:
        harness._live_procs[proc.pid] = proc

    def stop():
        harness._stop_popen(proc, grace=10)
        with harness._live_lock:
            harness._live_procs.pop(proc.pid, None)
    case.addCleanup(stop)
    return proc


class NotifySocket:
    """systemd's side of sd_notify: a unix datagram socket; each datagram is one message of
    newline-separated VAR=value fields."""

    def __init__(self, case):
        self.dir = harness.temp_dir(case.addCleanup, "warmfs-notify-")
        self.path = str(self.dir / "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        case.addCleanup(self.sock.close)
        self.sock.bind(self.path)
        self.messages: list[str] = []

    def wait_for(self, field: str, proc: subprocess.Popen, log: Path, timeout: float = 30.0,
                 on_message=None) -> str:
        """Messages until one holds `field` (e.g. READY=1); on_message(message) runs as each
        arrives, before anything else happens."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(0.2)
            try:
                message = self.sock.recv(65536).decode()
            except socket.timeout:
                if proc.poll() is not None:
                    raise AssertionError(f"warmfs exited {proc.returncode} before {field}; "
                                         f"messages {self.messages}\n{harness._tail(log)}")
                continue
            if on_message is not None:
                on_message(message)
            self.messages.append(message)
            if field in message.split("\n"):
                return message
        raise AssertionError(f"no {field} within {timeout}s; messages {self.messages}\n"
                             f"{harness._tail(log)}")


class Notify(harness.WarmfsTestCase):
    """sd_notify readiness and stop, as a Type=notify unit sees them."""

    def test_mount_foreground_ready_once_it_answers_stopping_on_sigterm(self):
        d = _tempdir(self, "warmfs-notify-")
        mnt, log = d / "mnt", harness.log_dir("mounts") / "notify-mount.log"
        sock = NotifySocket(self)
        env = harness.base_env(d / "home", MOTO.key, MOTO.secret, {"NOTIFY_SOCKET": sock.path})
        proc = _start(self, [harness.WARMFS, "mount", f"s3://{BUCKET}", mnt, "--foreground",
                             "--endpoint", MOTO.endpoint, "--region", harness.REGION,
                             "--path-style", "--memory-cache-size", "64M",
                             "--log-file", log, "--log-level", "debug"], env, log)
        seen = {}

        def at_arrival(message: str) -> None:
            # What systemd's dependents would find at the moment READY=1 arrives.
            if "READY=1" in message.split("\n"):
                seen["mounted"] = harness.is_mounted(mnt)
                seen["entries"] = sorted(os.listdir(mnt))
                seen["data"] = (mnt / "train" / "a.bin").read_bytes()

        ready = sock.wait_for("READY=1", proc, log, on_message=at_arrival)
        self.assertEqual(sock.messages, [ready], "nothing before READY=1")
        self.assertTrue(seen["mounted"], f"READY=1 before {mnt} was mounted")
        self.assertEqual(seen["entries"], ["top.txt", "train"])
        self.assertEqual(seen["data"], DATA)
        self.assertIn(f"STATUS=mounted s3://{BUCKET} at {mnt}", ready.split("\n"))
        self.assertIsNone(proc.poll(), "--foreground: still running after READY=1")

        proc.send_signal(signal.SIGTERM)
        stopping = sock.wait_for("STOPPING=1", proc, log)
        self.assertIn("STATUS=", stopping)
        self.assertEqual(proc.wait(30), 0, harness._tail(log))
        self.assertFalse(harness.is_mounted(mnt), "SIGTERM unmounts")

    def test_mount_failure_sends_no_ready(self):
        d = _tempdir(self, "warmfs-notify-")
        log = harness.log_dir("mounts") / "notify-mount-fail.log"
        sock = NotifySocket(self)
        env = harness.base_env(d / "home", MOTO.key, MOTO.secret, {"NOTIFY_SOCKET": sock.path})
        proc = _start(self, [harness.WARMFS, "mount", "s3://no-such-bucket", d / "mnt",
                             "--foreground", "--endpoint", MOTO.endpoint, "--region",
                             harness.REGION, "--path-style", "--log-file", log], env, log)
        self.assertEqual(proc.wait(30), 1)
        sock.sock.settimeout(0.5)
        with self.assertRaises(socket.timeout, msg="a failed mount says nothing to systemd"):
            sock.sock.recv(65536)
        self.assertFalse(harness.is_mounted(d / "mnt"))

    def test_background_mount_says_nothing(self):
        # mount(8), or a script inside some Type=notify unit: the parent that was started
        # reports by exiting; a daemon it leaves behind must not speak for that unit.
        sock = NotifySocket(self)
        m = self.mount(MOTO, f"s3://{BUCKET}", env_extra={"NOTIFY_SOCKET": sock.path})
        self.assertEqual((m.path / "top.txt").read_bytes(), b"top\n")
        run = harness.run_cli(["unmount", m.path], m.env)
        self.assertEqual(run.rc, 0, run.describe())
        sock.sock.settimeout(0.5)
        with self.assertRaises(socket.timeout, msg="a background mount says nothing to systemd"):
            sock.sock.recv(65536)

    def test_serve_ready_once_it_listens_stopping_on_sigterm(self):
        d = _tempdir(self, "warmfs-notify-")
        port = harness.free_port()
        log = harness.log_dir("servers") / f"notify-serve-{port}.log"
        sock = NotifySocket(self)
        env = harness.base_env(d / "home", MOTO.key, MOTO.secret, {"NOTIFY_SOCKET": sock.path})
        proc = _start(self, [harness.WARMFS, "serve", "--bucket", BUCKET,
                             "--listen", f"127.0.0.1:{port}", "--endpoint", MOTO.endpoint,
                             "--region", harness.REGION, "--path-style",
                             "--cache-dir", d / "cache", "--cache-size", "128M",
                             "--memory-cache-size", "32M", "--insecure-no-token",
                             "--log-file", log], env, log)
        seen = {}

        def at_arrival(message: str) -> None:
            if "READY=1" in message.split("\n"):
                with socket.create_connection(("127.0.0.1", port), timeout=5):
                    seen["connected"] = True

        ready = sock.wait_for("READY=1", proc, log, on_message=at_arrival)
        self.assertTrue(seen.get("connected"))
        self.assertIn(f"port {port}", ready)
        proc.send_signal(signal.SIGTERM)
        sock.wait_for("STOPPING=1", proc, log)
        self.assertEqual(proc.wait(30), 0, harness._tail(log))


# --------------------------------------------------------------------------------------------
# The Debian package

EXPECTED_FILES = {
    "./usr/bin/warmfs",
    "./sbin/mount.warmfs",
    "./sbin/mount.fuse.warmfs",
    "./lib/systemd/system/warmfs@.service",
    "./lib/systemd/system/warmfs-serve.service",
    "./usr/share/man/man1/warmfs.1.gz",
    "./usr/share/man/man1/warmfs-mount.1.gz",
    "./usr/share/man/man1/warmfs-unmount.1.gz",
    "./usr/share/man/man1/warmfs-stats.1.gz",
    "./usr/share/man/man1/warmfs-prefetch.1.gz",
    "./usr/share/man/man1/warmfs-serve.1.gz",
    "./usr/share/man/man1/warmfs-plan.1.gz",
    "./usr/share/man/man8/mount.warmfs.8.gz",
    "./usr/share/man/man8/mount.fuse.warmfs.8.gz",
    "./usr/share/doc/warmfs/copyright",
    "./usr/share/doc/warmfs/changelog.gz",
    "./usr/share/doc/warmfs/deploy.md",
    "./usr/share/doc/warmfs/examples/example.conf",
    "./usr/share/doc/warmfs/examples/serve.conf",
    "./usr/share/doc/warmfs/examples/fstab.example",
}
INSTALLED = ["/usr/bin/warmfs", "/sbin/mount.warmfs", "/sbin/mount.fuse.warmfs",
             "/lib/systemd/system/warmfs@.service", "/lib/systemd/system/warmfs-serve.service"]
BUILD_TIMEOUT = 3600  # waits for the shared build lock, then builds on two cores


def _run(argv: list[str], timeout: float = 120, env: dict[str, str] | None = None) -> harness.Run:
    start = time.monotonic()
    p = subprocess.run([str(a) for a in argv], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=timeout, env=env or {"PATH": harness.BASE_PATH,
                                                               "LANG": "C.UTF-8"})
    return harness.Run([str(a) for a in argv], p.returncode, p.stdout, p.stderr,
                       time.monotonic() - start)


def _dpkg(args: list[str]) -> harness.Run:
    """dpkg, retried while another dpkg on the machine holds its lock."""
    deadline = time.monotonic() + 300
    while True:
        run = _run(["dpkg", *args], timeout=300)
        if run.rc == 0 or "lock" not in run.stderr or time.monotonic() > deadline:
            return run
        time.sleep(2)


class DebianPackage(harness.WarmfsTestCase):
    timeout = 120.0
    deb: Path
    out: Path

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        missing = [t for t in ("dpkg-buildpackage", "dpkg-deb", "lintian", "help2man", "mount",
                               "umount") if shutil.which(t, path=harness.BASE_PATH) is None]
        if missing:
            raise harness.HarnessError(f"missing {', '.join(missing)} "
                                       "(bash tools/lib/install-deps.sh)")
        if _run(["dpkg-query", "-W", "-f=${Status}", "warmfs"]).stdout.endswith(" installed"):
            raise harness.HarnessError("a warmfs package is installed already; this test installs "
                                       "and removes its own (dpkg -r warmfs first)")
        cls.out = harness.temp_dir(cls.addClassCleanup, "warmfs-deb-out-")
        run = _run([harness.REPO / "tools" / "build-deb", "--out", cls.out],
                   timeout=BUILD_TIMEOUT, env={"PATH": harness.BASE_PATH, "LANG": "C.UTF-8",
                                               "HOME": str(cls.out)})
        if run.rc != 0:
            raise AssertionError(f"tools/build-deb failed\n{run.describe()}")
        cls.deb = Path(run.stdout.strip().splitlines()[-1])
        cls.addClassCleanup(cls._remove)
        install = _dpkg(["-i", cls.deb])
        if install.rc != 0:
            raise AssertionError(f"dpkg -i failed\n{install.describe()}")

    @classmethod
    def _remove(cls):
        run = _dpkg(["-r", "warmfs"])
        left = [p for p in INSTALLED if os.path.lexists(p)]
        if run.rc != 0 or left:
            raise AssertionError(f"dpkg -r warmfs left {left}\n{run.describe()}")
        # The systemd maintainer scripts keep the package as "config-files" until purged.
        purge = _dpkg(["--purge", "warmfs"])
        if purge.rc != 0:
            raise AssertionError(f"dpkg --purge warmfs failed\n{purge.describe()}")

    # -- the package ---------------------------------------------------------------------

    def test_file_list(self):
        run = _run(["dpkg-deb", "-c", self.deb])
        self.assertEqual(run.rc, 0, run.describe())
        # "lrwxrwxrwx root/root 0 2026-12-06 08:00 ./sbin/mount.warmfs -> ../usr/bin/warmfs"
        entries = {}
        for line in run.stdout.splitlines():
            fields = line.split(None, 5)
            path, _, target = fields[5].partition(" -> ")
            entries[path] = (fields[0], target)
        self.assertEqual(EXPECTED_FILES - set(entries), set(), run.stdout)
        for link in ("./sbin/mount.warmfs", "./sbin/mount.fuse.warmfs"):
            # Absolute: the link crosses top-level directories (Debian policy 10.5).
            self.assertEqual(entries[link], ("lrwxrwxrwx", "/usr/bin/warmfs"))
        self.assertTrue(entries["./usr/bin/warmfs"][0].startswith("-rwxr-xr-x"))
        # Nothing of the build or the tests in it.
        odd = [p for p in entries if not p.rstrip("/").startswith(
            ("./usr/bin", "./sbin", "./lib/systemd/system", "./usr/share/man",
             "./usr/share/doc/warmfs", "./usr/share/lintian")) and p not in
            ("./", "./usr/", "./usr/share/", "./usr/share/doc/", "./lib/", "./lib/systemd/")]
        self.assertEqual(odd, [])
        control = _run(["dpkg-deb", "-f", self.deb, "Depends"])
        self.assertRegex(control.stdout, r"(^|, )fuse3(,|$)")
        self.assertIn("libfuse3-3", control.stdout)

    def test_lintian_reports_no_errors(self):
        run = _run(["lintian", "--fail-on", "error", self.deb], timeout=600)
        errors = [line for line in run.stdout.splitlines() if line.startswith("E:")]
        self.assertEqual(errors, [], run.stdout)
        self.assertEqual(run.rc, 0, run.describe())

    def test_installed(self):
        for path in INSTALLED:
            self.assertTrue(os.path.exists(path), path)
        for link in ("/sbin/mount.warmfs", "/sbin/mount.fuse.warmfs"):
            self.assertEqual(os.path.realpath(link), os.path.realpath("/usr/bin/warmfs"))
        self.assertEqual(_run(["/usr/bin/warmfs", "--version"]).stdout.strip(), "warmfs 0.1.0")
        for page in ("warmfs", "warmfs-mount", "warmfs-serve", "warmfs-stats", "warmfs-unmount",
                     "warmfs-prefetch", "mount.warmfs", "mount.fuse.warmfs"):
            run = _run(["man", "-w", page])
            self.assertEqual(run.rc, 0, run.describe())
        run = _run(["systemd-analyze", "verify", "--man=no", "warmfs-serve.service",
                    "warmfs@example.service"])
        self.assertEqual((run.rc, run.stderr), (0, ""), run.describe())

    # -- mount(8) and fstab ----------------------------------------------------------------

    def _fstab(self, d: Path, source: str, fstype: str, options: str) -> Path:
        fstab = d / "fstab"
        fstab.write_text(f"# test fstab\n{source}  {d / 'mnt'}  {fstype}  {options}  0 0\n")
        return fstab

    def _mount(self, d: Path, fstab: Path, extra: list[str] = (), env_extra=None,
               credentials: bool = True) -> harness.Run:
        mnt = d / "mnt"

        def cleanup():
            pids = harness.daemon_pids(mnt)
            harness.force_unmount(mnt)
            for pid in harness.wait_gone(pids, 5):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.addCleanup(cleanup)
        env = harness.base_env(d / "home", MOTO.key if credentials else None,
                               MOTO.secret if credentials else None, env_extra)
        return _run(["mount", "-T", fstab, *extra, mnt], timeout=60, env=env)

    def _options(self, d: Path, more: str) -> str:
        return (f"endpoint={MOTO.endpoint},region={harness.REGION},path_style,"
                f"memory-cache-size=64M,log-file={d / 'warmfs.log'},log_level=debug,{more}")

    def _umount(self, mnt: Path) -> None:
        pids = harness.daemon_pids(mnt)
        self.assertTrue(pids, "a warmfs daemon serves the mount")
        run = _run(["umount", mnt], timeout=60)
        self.assertEqual(run.rc, 0, run.describe())
        self.assertFalse(harness.is_mounted(mnt))
        self.assertEqual(harness.wait_gone(pids, 30), [], "the daemon exits after umount")

    def test_fstab_type_warmfs(self):
        d = _tempdir(self, "warmfs-fstab-")
        mnt = d / "mnt"
        fstab = self._fstab(d, f"s3://{BUCKET}/train", "warmfs", self._options(
            d, "_netdev,nofail,allow_other,uid=1234,gid=2345,noatime,nosuid,nodev,"
               "x-systemd.requires=network-online.target,x-systemd.mount-timeout=90,defaults"))
        run = self._mount(d, fstab)
        self.assertEqual(run.rc, 0, run.describe() + "\n" + harness._tail(d / "warmfs.log"))
        lines = harness.mounts_at(mnt)
        self.assertEqual(len(lines), 1, lines)
        source, _, fstype, opts = lines[0].split()[:4]
        self.assertEqual((source, fstype), (f"s3://{BUCKET}/train/", "fuse.warmfs"))
        self.assertIn("allow_other", opts)
        self.assertTrue(opts.startswith("rw,"), opts)
        self.assertEqual(sorted(os.listdir(mnt)), ["a.bin", "b.txt"])
        self.assertEqual((mnt / "a.bin").read_bytes(), DATA)
        st = os.stat(mnt / "a.bin")
        self.assertEqual((st.st_uid, st.st_gid), (1234, 2345))
        (mnt / "written.txt").write_bytes(b"through fstab\n")
        body = MOTO.client().get_object(Bucket=BUCKET, Key="train/written.txt")["Body"].read()
        self.assertEqual(body, b"through fstab\n")
        self._umount(mnt)

    def test_fstab_type_fuse_warmfs_read_only_with_credentials_file(self):
        d = _tempdir(self, "warmfs-fstab-")
        mnt = d / "mnt"
        creds = d / "aws-credentials"
        creds.write_text(f"[default]\naws_access_key_id = {MOTO.key}\n"
                         f"aws_secret_access_key = {MOTO.secret}\n")
        creds.chmod(0o600)
        fstab = self._fstab(d, f"s3://{BUCKET}", "fuse.warmfs",
                            self._options(d, f"ro,_netdev,credentials_file={creds},uid=root"))
        run = self._mount(d, fstab, credentials=False)
        self.assertEqual(run.rc, 0, run.describe() + "\n" + harness._tail(d / "warmfs.log"))
        opts = harness.mounts_at(mnt)[0].split()[3]
        self.assertTrue(opts.startswith("ro,"), opts)
        self.assertEqual((mnt / "top.txt").read_bytes(), b"top\n")
        self.assertEqual(os.stat(mnt / "top.txt").st_mode & 0o777, 0o444)
        with self.assertRaises(OSError) as e:
            (mnt / "nope.txt").write_bytes(b"x")
        self.assertEqual(e.exception.errno, 30)  # EROFS
        self._umount(mnt)

    def test_mount_o_ro_makes_a_read_write_entry_read_only(self):
        d = _tempdir(self, "warmfs-fstab-")
        mnt = d / "mnt"
        fstab = self._fstab(d, f"s3://{BUCKET}", "warmfs", self._options(d, "rw,nofail"))
        run = self._mount(d, fstab, ["-o", "ro"])
        self.assertEqual(run.rc, 0, run.describe() + "\n" + harness._tail(d / "warmfs.log"))
        self.assertTrue(harness.mounts_at(mnt)[0].split()[3].startswith("ro,"))
        with self.assertRaises(OSError):
            (mnt / "nope.txt").write_bytes(b"x")
        self._umount(mnt)

    def test_unknown_option_is_a_one_line_error(self):
        d = _tempdir(self, "warmfs-fstab-")
        mnt = d / "mnt"
        fstab = self._fstab(d, f"s3://{BUCKET}", "warmfs", self._options(d, "bogus=1,nofail"))
        run = self._mount(d, fstab)
        self.assertNotEqual(run.rc, 0, run.describe())
        self.assertIn("mount.warmfs: unknown option 'bogus' (see mount.warmfs(8))", run.stderr)
        self.assertFalse(harness.is_mounted(mnt))
        self.assertEqual(harness.daemon_pids(mnt), [])
        # The helper itself: exactly one line, and exit status 2 (usage).
        direct = _run(["/sbin/mount.warmfs", f"s3://{BUCKET}", mnt, "-o", "ro,bogus=1"])
        self.assertEqual(direct.rc, 2, direct.describe())
        self.assertEqual(direct.stderr, "mount.warmfs: unknown option 'bogus' "
                                        "(see mount.warmfs(8))\n")

    def test_fake_mount_prints_the_command(self):
        d = _tempdir(self, "warmfs-fstab-")
        run = _run(["/sbin/mount.fuse.warmfs", f"s3://{BUCKET}", d / "mnt", "-f", "-o",
                    "ro,allow_other,cache_dir=/nvme/warmfs,uid=0"])
        self.assertEqual(run.rc, 0, run.describe())
        self.assertEqual(run.stderr, f"mount.fuse.warmfs: warmfs mount s3://{BUCKET} {d / 'mnt'} "
                                     "--allow-other --cache-dir /nvme/warmfs --uid 0 --read-only\n")
        self.assertFalse(harness.is_mounted(d / "mnt"))


if __name__ == "__main__":
    unittest.main()
