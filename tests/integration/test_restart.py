"""Restartable mounts (docs/reliability.md): `warmfs restart MNT` and a crash of the daemon
replace the daemon under a mount that stays mounted. Files held open keep reading the right
bytes through restarts and a kill -9, with no error (never ENOTCONN); node ids the kernel holds
name the same files; a file open for writing across a restart gets EIO on its next write and
close (after a crash, the object keeps its earlier content); the supervisor ends when the mount is unmounted.

Small objects on moto with authentication on; the large file read in a loop on s3rver (moto
copies the whole object per range GET).
"""

import errno
import os
import shutil
import signal
import subprocess
import threading
import time
import unittest

import harness
from harness import MiB

MOTO: harness.MotoServer
S3RVER: harness.S3rver


def setUpModule():
    harness.require("warmfs", "fuse", "moto", "s3rver")
    global MOTO, S3RVER
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    S3RVER = harness.start_server(unittest.addModuleCleanup, harness.S3rver())


def state_file(mnt) -> str:
    """The supervisor's "PID SERVED STARTTIME" file (cli/supervisor.h), as root."""
    name = "mnt" + "".join(c if c.isalnum() or c in "._-" else f"%{ord(c):02X}"
                           for c in os.path.realpath(mnt))
    return f"/run/warmfs/{name[:240]}/supervisor"


def supervisor_state(mnt) -> tuple[int, int]:
    with open(state_file(mnt)) as f:
        pid, served, _started = f.read().split()
    return int(pid), int(served)


def daemon_child(supervisor: int) -> int:
    """The daemon the supervisor runs now."""
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == supervisor and fields[0] != "Z":
                kids.append(int(entry))
    if len(kids) != 1:
        raise AssertionError(f"supervisor {supervisor} has children {kids}, want one daemon")
    return kids[0]


def wait_for(what: str, cond, timeout: float, detail=lambda: "") -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{detail()}")
        time.sleep(0.02)


class Reader(threading.Thread):
    """Reads `path` whole in a loop through one descriptor held open (the page cache dropped
    before each pass, so every pass reaches warmfs), checking the bytes; keeps the first error."""

    def __init__(self, path, expected: bytes, block: int):
        super().__init__(daemon=True)
        self.path, self.expected, self.block = path, expected, block
        self.passes = 0
        self.error: str | None = None
        self.stop = threading.Event()

    def run(self):
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as e:
            self.error = f"open: {e}"
            return
        try:
            while not self.stop.is_set():
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                off = 0
                while off < len(self.expected):
                    got = os.pread(fd, self.block, off)
                    want = self.expected[off:off + self.block]
                    if got != want:
                        self.error = f"pass {self.passes}: wrong bytes at {off} ({len(got)} bytes)"
                        return
                    off += len(got)
                self.passes += 1
        except OSError as e:
            self.error = f"pass {self.passes}: {e!r} (errno {errno.errorcode.get(e.errno)})"
        finally:
            os.close(fd)


class Restart(harness.WarmfsTestCase):
    timeout = 240.0

    def restart(self, m) -> None:
        run = harness.run_cli(["restart", str(m.path)], m.env, timeout=60)
        self.assertEqual(run.rc, 0, f"{run.describe()}\n{m.log_tail(40)}")

    def unmount_and_check_gone(self, m) -> None:
        pids = harness.daemon_pids(m.path)
        self.assertGreaterEqual(len(pids), 2, "want the supervisor and its daemon")
        run = subprocess.run(["fusermount3", "-u", str(m.path)], capture_output=True, timeout=30,
                             env={"PATH": harness.BASE_PATH})
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(harness.wait_gone(pids, 20), [], f"processes left\n{m.log_tail(30)}")
        self.assertFalse(harness.is_mounted(m.path))
        self.assertFalse(os.path.exists(state_file(m.path)), "the state directory was left")

    def test_idle_restart_keeps_names_and_bytes(self):
        c = MOTO.client()
        harness.create_bucket(c, "idle")
        objects = {f"d{i}/f{j}.bin": harness.make_data(100_000 + i * 7 + j, seed=10 * i + j)
                   for i in range(3) for j in range(4)}
        objects["top.txt"] = b"top\n"
        harness.put_many(c, "idle", objects, threads=4)
        m = self.mount(MOTO, "s3://idle", args=["--restartable"])
        # Looked up (the kernel keeps their node ids for the 60 s TTL) before the restarts.
        for key, data in objects.items():
            self.assertEqual((m.path / key).read_bytes(), data)
        dir_fd = os.open(m.path / "d1", os.O_RDONLY | os.O_DIRECTORY)  # open across restarts
        try:
            for n in range(2):
                _, served = supervisor_state(m.path)
                self.restart(m)
                self.assertEqual(supervisor_state(m.path)[1], served + 1)
                self.assertEqual(sorted(os.listdir(m.path)), ["d0", "d1", "d2", "top.txt"])
                for key, data in objects.items():
                    self.assertEqual(harness.read_uncached(m.path / key), data,
                                     f"{key} after {n + 1}")
            want = [f"f{j}.bin" for j in range(4)]
            self.assertEqual(sorted(os.listdir(m.path / "d1")), want)
            self.assertEqual(sorted(os.listdir(dir_fd)), want)
        finally:
            os.close(dir_fd)
        self.unmount_and_check_gone(m)

    def test_restart_of_a_plain_mount_is_refused(self):
        c = MOTO.client()
        harness.create_bucket(c, "plain")
        m = self.mount(MOTO, "s3://plain")
        run = harness.run_cli(["restart", str(m.path)], m.env)
        self.assertEqual(run.rc, 1, run.describe())
        self.assertIn("not a restartable warmfs mount", run.stderr)
        self.assertTrue(harness.is_mounted(m.path))

    def test_open_files_read_on_through_restarts_and_a_crash(self):
        c = S3RVER.client()
        harness.create_bucket(c, "reads")
        big = harness.make_data(24 * MiB + 333, seed=7)
        small = {f"s/{i}.bin": harness.make_data(300_000 + i, seed=100 + i) for i in range(4)}
        harness.put_object(c, "reads", "big.bin", big)
        harness.put_many(c, "reads", small, threads=4)
        m = self.mount(S3RVER, "s3://reads", args=["--restartable"])
        readers = [Reader(m.path / "big.bin", big, MiB), Reader(m.path / "big.bin", big, 131_072)]
        readers += [Reader(m.path / k, d, 65_536) for k, d in small.items()]
        for r in readers:
            r.start()

        def stop_readers():
            # A reader stuck in a read (a bug) is left behind: the mount's cleanup ends it.
            for r in readers:
                r.stop.set()
            deadline = time.monotonic() + 20
            for r in readers:
                r.join(max(0.1, deadline - time.monotonic()))
        self.addCleanup(stop_readers)

        def failures():
            return [f"{r.path}: {r.error}" for r in readers if r.error]

        def progressed(passes: list[int], n: int = 1):
            return lambda: failures() or all(r.passes >= p + n for r, p in zip(readers, passes))

        wait_for("first passes", progressed([0] * len(readers)), 60, m.log_tail)
        for _ in range(3):
            before = [r.passes for r in readers]
            self.restart(m)
            wait_for("reads after a restart", progressed(before), 60, m.log_tail)
            self.assertEqual(failures(), [], m.log_tail(40))
        # A crash: the daemon killed in the middle of reads.
        supervisor, served = supervisor_state(m.path)
        os.kill(daemon_child(supervisor), signal.SIGKILL)
        wait_for("a new daemon", lambda: supervisor_state(m.path)[1] > served, 60, m.log_tail)
        before = [r.passes for r in readers]
        wait_for("reads after a crash", progressed(before, 2), 60, m.log_tail)
        stop_readers()
        self.assertEqual(failures(), [], m.log_tail(40))
        self.assertEqual(sorted(os.listdir(m.path / "s")), [f"{i}.bin" for i in range(4)])
        self.assertEqual(harness.read_uncached(m.path / "big.bin"), big)
        self.unmount_and_check_gone(m)

    def test_writer_across_a_restart_gets_eio(self):
        c = MOTO.client()
        harness.create_bucket(c, "writes")
        m = self.mount(MOTO, "s3://writes", args=["--restartable"])
        done = m.path / "done.bin"
        done.write_bytes(b"closed before the restart\n")
        fd = os.open(m.path / "open.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, b"first part\n")
        self.restart(m)
        with self.assertRaises(OSError) as e:
            os.write(fd, b"second part\n")
        self.assertEqual(e.exception.errno, errno.EIO)
        with self.assertRaises(OSError) as e:
            os.close(fd)
        self.assertEqual(e.exception.errno, errno.EIO)
        self.assertIn("before the daemon restarted", harness._tail(m.log, 200))
        # What was closed before the restart is there; new files are written as before.
        self.assertEqual(c.get_object(Bucket="writes", Key="done.bin")["Body"].read(),
                         b"closed before the restart\n")
        (m.path / "after.bin").write_bytes(b"after\n")
        self.assertEqual(c.get_object(Bucket="writes", Key="after.bin")["Body"].read(), b"after\n")
        self.assertEqual(done.read_bytes(), b"closed before the restart\n")
        self.unmount_and_check_gone(m)

    def test_writer_across_a_crash_gets_eio_and_the_object_keeps_its_content(self):
        c = MOTO.client()
        harness.create_bucket(c, "crash")
        harness.put_object(c, "crash", "f.bin", b"earlier content\n")
        m = self.mount(MOTO, "s3://crash", args=["--restartable"])
        fd = os.open(m.path / "f.bin", os.O_WRONLY | os.O_TRUNC)
        os.write(fd, b"lost with the daemon\n")
        supervisor, served = supervisor_state(m.path)
        os.kill(daemon_child(supervisor), signal.SIGKILL)
        wait_for("a new daemon", lambda: supervisor_state(m.path)[1] > served, 60, m.log_tail)
        with self.assertRaises(OSError) as e:
            os.fsync(fd)
        self.assertEqual(e.exception.errno, errno.EIO)
        with self.assertRaises(OSError) as e:
            os.close(fd)
        self.assertEqual(e.exception.errno, errno.EIO)
        self.assertIn("/f.bin opened for writing before the daemon restarted",
                      harness._tail(m.log, 200))
        self.assertEqual(c.get_object(Bucket="crash", Key="f.bin")["Body"].read(),
                         b"earlier content\n")
        self.unmount_and_check_gone(m)

    def test_restart_runs_the_binary_on_disk(self):
        # An upgrade: the binary is replaced (renamed over, as a package manager does), then
        # `warmfs restart` runs the new one.
        c = MOTO.client()
        harness.create_bucket(c, "upgrade")
        harness.put_object(c, "upgrade", "a.txt", b"a\n")
        bindir = harness.temp_dir(self.addCleanup, prefix="warmfs-bin-")
        binary = bindir / "warmfs"
        shutil.copy2(harness.WARMFS, binary)
        original = harness.WARMFS
        harness.WARMFS = binary
        self.addCleanup(setattr, harness, "WARMFS", original)
        m = self.mount(MOTO, "s3://upgrade", args=["--restartable"])
        old_daemon = daemon_child(supervisor_state(m.path)[0])
        self.assertEqual(os.stat(f"/proc/{old_daemon}/exe").st_ino, os.stat(binary).st_ino)
        shutil.copy2(original, bindir / "warmfs.new")
        os.rename(bindir / "warmfs.new", binary)
        self.restart(m)
        new_daemon = daemon_child(supervisor_state(m.path)[0])
        self.assertNotEqual(new_daemon, old_daemon)
        self.assertEqual(os.stat(f"/proc/{new_daemon}/exe").st_ino, os.stat(binary).st_ino)
        self.assertEqual((m.path / "a.txt").read_bytes(), b"a\n")
        self.unmount_and_check_gone(m)


if __name__ == "__main__":
    unittest.main()
