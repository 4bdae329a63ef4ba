"""Keys become a directory tree: ls, stat, find; implicit dirs and dir/ markers; a directory bigger
than one LIST page; bad keys skipped; a prefix mount; owner/mode options; a profile.

All against moto with authentication on (every LIST and HEAD is SigV4-checked).
"""

import ctypes
import errno
import os
import stat
import struct
import subprocess
import unittest

import harness

MOTO: harness.MotoServer

TREE = {
    "README.md": b"# sample\n" * 11,
    "data/shard-0000.tar": harness.make_data(300_000, 1),
    "data/shard-0001.tar": harness.make_data(1_048_576, 2),
    "data/shard-0002.tar": harness.make_data(1_048_577, 3),
    "data/labels.csv": b"id,label\n" + b"".join(b"%d,%d\n" % (i, i % 7) for i in range(500)),
    "data/empty.bin": b"",
    "data/nested/deep/deeper/leaf.txt": b"leaf\n",  # three implicit dirs
    "marker/": b"",  # a dir/ marker with content
    "marker/inside.txt": b"inside\n",
    "emptymarker/": b"",  # a dir/ marker alone: an empty directory
    "both/": b"",
    "both/sub/": b"",
    "both/sub/x.txt": b"x",
    "données/été.txt": "accents\n".encode(),
}
MANY = {f"many/item-{i:05d}.txt": b"%d\n" % i for i in range(1100)}  # > 1000: two LIST pages
TREE_ALL = {**TREE, **MANY}


def setUpModule():
    harness.require("warmfs", "fuse", "moto")
    global MOTO
    MOTO = harness.start_server(unittest.addModuleCleanup, harness.MotoServer())
    c = MOTO.client()
    harness.create_bucket(c, "tree")
    harness.put_many(c, "tree", TREE_ALL, threads=12)
    assert len(harness.list_keys(c, "tree")) == len(TREE_ALL)


def _sizes(objects):
    return {k: len(v) for k, v in objects.items()}


class Tree(harness.WarmfsTestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = harness.mount(cls.addClassCleanup, MOTO, "s3://tree", name="tree")
        cls.root = cls.m.path

    def test_walk_matches_bucket(self):
        expected = harness.expected_tree(_sizes(TREE_ALL))
        got = harness.walk_tree(self.root)
        self.assertEqual(sorted(set(expected) - set(got)), [], "missing from the mount")
        self.assertEqual(sorted(set(got) - set(expected)), [], "not in the bucket")
        self.assertEqual(got, expected)

    def test_find(self):
        run = subprocess.run(["find", str(self.root), "-printf", r"%P\t%y\t%s\n"],
                             capture_output=True, timeout=60, env={"PATH": harness.BASE_PATH,
                                                                   "LC_ALL": "C.UTF-8"})
        self.assertEqual(run.returncode, 0, run.stderr.decode(errors="replace"))
        got = {}
        for line in run.stdout.decode().splitlines():
            path, kind, size = line.split("\t")
            if path:
                got[path] = ("f", int(size)) if kind == "f" else (kind,)
        self.assertEqual(got, harness.expected_tree(_sizes(TREE_ALL)))

    def test_ls(self):
        env = {"PATH": harness.BASE_PATH, "LC_ALL": "C"}
        run = subprocess.run(["ls", "-1", str(self.root)], capture_output=True, timeout=30,
                             env=env)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.decode().splitlines(),
                         sorted(["README.md", "data", "marker", "emptymarker", "both", "données",
                                 "many"], key=lambda s: s.encode()))
        run = subprocess.run(["ls", "-la", str(self.root / "data")], capture_output=True,
                             timeout=30, env=env)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertRegex(run.stdout.decode(), r"300000 .* shard-0000\.tar")
        names = run.stdout.decode().split()
        self.assertEqual(names.count("."), 1)
        self.assertEqual(names.count(".."), 1)

    def test_stat_files_and_dirs(self):
        for key, data in TREE.items():
            if key.endswith("/"):
                continue
            with self.subTest(key=key):
                st = os.stat(self.root / key)
                self.assertTrue(stat.S_ISREG(st.st_mode), oct(st.st_mode))
                self.assertEqual(st.st_size, len(data))
                self.assertEqual(stat.S_IMODE(st.st_mode), 0o644)  # the default of a writable mount
                self.assertEqual((st.st_uid, st.st_gid), (os.getuid(), os.getgid()))
        for d in ["data", "data/nested", "data/nested/deep", "marker", "emptymarker", "both/sub",
                  "données", "many", "."]:
            with self.subTest(dir=d):
                st = os.stat(self.root / d)
                self.assertTrue(stat.S_ISDIR(st.st_mode), oct(st.st_mode))
                self.assertEqual(stat.S_IMODE(st.st_mode), 0o755)  # the default of a writable mount

    def test_extended_attributes(self):
        # Only user.* exists. The other namespaces answer "not supported", which ls -l remembers
        # per file system (one ask per mount, not two per file); a missing user.* attribute is
        # "no data".
        f = self.root / "data/labels.csv"
        for name in ["security.selinux", "system.posix_acl_access", "trusted.x"]:
            with self.subTest(name=name):
                with self.assertRaises(OSError) as cm:
                    os.getxattr(f, name)
                self.assertEqual(cm.exception.errno, errno.EOPNOTSUPP, os.strerror(cm.exception.errno))
        with self.assertRaises(OSError) as cm:
            os.getxattr(f, "user.nothing")
        self.assertEqual(cm.exception.errno, errno.ENODATA)
        self.assertIn(b"bytes_read", os.getxattr(self.root, "user.warmfs.stats"))
        # ls -l of the whole tree asks the mount for ACLs and SELinux labels only once each.
        run = subprocess.run(["strace", "-f", "-c", "-e", "trace=getxattr,lgetxattr", "ls", "-lR",
                              str(self.root)], capture_output=True, timeout=60,
                             env={"PATH": harness.BASE_PATH, "LC_ALL": "C"})
        self.assertEqual(run.returncode, 0, run.stderr.decode(errors="replace"))
        calls = {line.split()[-1]: int(line.split()[3]) for line in run.stderr.decode().splitlines()
                 if line.strip().endswith("getxattr")}
        self.assertLessEqual(sum(calls.values()), 4, run.stderr.decode())

    def test_missing_paths(self):
        for path, err in [("nope", errno.ENOENT), ("data/nope.bin", errno.ENOENT),
                          ("nodir/x", errno.ENOENT), ("README.md/x", errno.ENOTDIR),
                          ("data/shard-0000", errno.ENOENT), ("marke", errno.ENOENT)]:
            with self.subTest(path=path):
                with self.assertRaises(OSError) as cm:
                    os.stat(self.root / path)
                self.assertEqual(cm.exception.errno, err)

    def test_implicit_dirs_and_markers(self):
        self.assertEqual(os.listdir(self.root / "data/nested"), ["deep"])
        self.assertEqual(os.listdir(self.root / "data/nested/deep/deeper"), ["leaf.txt"])
        self.assertEqual(os.listdir(self.root / "marker"), ["inside.txt"])
        self.assertEqual(os.listdir(self.root / "emptymarker"), [])
        self.assertEqual(os.listdir(self.root / "both"), ["sub"])
        self.assertEqual(os.listdir(self.root / "both/sub"), ["x.txt"])
        self.assertEqual((self.root / "marker/inside.txt").read_bytes(), b"inside\n")
        self.assertEqual((self.root / "data/nested/deep/deeper/leaf.txt").read_bytes(), b"leaf\n")

    def test_directory_of_two_list_pages(self):
        names = os.listdir(self.root / "many")
        self.assertEqual(len(names), len(MANY))
        self.assertEqual(sorted(names), sorted(k.split("/")[1] for k in MANY))
        last = max(MANY)
        self.assertEqual((self.root / last).read_bytes(), MANY[last])

    def test_reads_small_files(self):
        for key in ["README.md", "data/labels.csv", "data/empty.bin", "données/été.txt"]:
            with self.subTest(key=key):
                self.assertEqual((self.root / key).read_bytes(), TREE[key])


def _getdents_calls(fd: int, bufsize: int):
    """Yields the (d_ino, name) entries of each getdents64 call on fd, with a buffer of bufsize
    bytes (glibc reads with st_blksize, 1 MiB on warmfs; a small one makes the kernel ask for
    more pages), until the end."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = ctypes.create_string_buffer(bufsize)
    while True:
        n = libc.syscall(217, fd, buf, bufsize)  # SYS_getdents64 on x86-64
        if n < 0:
            raise OSError(ctypes.get_errno(), "getdents64")
        if n == 0:
            return
        raw = buf.raw[:n]
        off = 0
        out = []
        while off < n:
            ino, _, reclen = struct.unpack_from("<QqH", raw, off)
            name = raw[off + 19:off + reclen].split(b"\0", 1)[0].decode()
            out.append((ino, name))
            off += reclen
        yield out


def _getdents(path, bufsize: int) -> list[tuple[int, str]]:
    """(d_ino, name) of every entry of a directory, read with getdents64 (_getdents_calls)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return [e for call in _getdents_calls(fd, bufsize) for e in call]
    finally:
        os.close(fd)


class Listings(harness.WarmfsTestCase):
    """What a listing gives the kernel (docs/posix.md#listings): names only to a caller that
    does not look at what it lists, attributes once it does; never a d_ino of 0."""

    def _nodes(self, m) -> int:
        return m.stats()["metadata"]["nodes"]

    def test_walk_builds_no_node_per_file_until_files_are_looked_at(self):
        m = harness.mount(self.addCleanup, MOTO, "s3://tree", args=["--read-only"], name="walk")
        walked = 0
        for _, _, files in os.walk(m.path):  # names and d_type: no stat of a file
            walked += len(files)
        self.assertEqual(walked, len(TREE_ALL) - sum(k.endswith("/") for k in TREE_ALL))
        after_walk = self._nodes(m)
        self.assertLess(after_walk, 40, "the walk made a node per file")
        # ls -l: a stat of each file of a directory it listed. Every answer is right, and from
        # then on this thread's listings carry attributes.
        for name in sorted(os.listdir(m.path / "many")):
            key = f"many/{name}"
            self.assertEqual(os.stat(m.path / key).st_size, len(MANY[key]))
        after_stat = self._nodes(m)
        self.assertGreaterEqual(after_stat - after_walk, len(MANY))
        names = os.listdir(m.path / "data")
        self.assertGreaterEqual(self._nodes(m) - after_stat, len(names) - 1)

    def test_writable_mount_lists_with_attributes(self):
        m = harness.mount(self.addCleanup, MOTO, "s3://tree", name="walk-rw")
        for _ in os.walk(m.path / "many"):
            pass
        self.assertGreaterEqual(self._nodes(m), len(MANY))

    def test_small_buffer_pages_carry_inode_numbers(self):
        for args in (["--read-only"], ["--read-only", "--readdirplus-always"], []):
            with self.subTest(args=args):
                m = harness.mount(self.addCleanup, MOTO, "s3://tree", args=args, name="getdents")
                entries = _getdents(m.path / "many", 4096)
                names = sorted(n for _, n in entries if n not in (".", ".."))
                self.assertEqual(names, sorted(k.split("/")[1] for k in MANY))
                zero = [n for ino, n in entries if ino == 0]
                self.assertEqual(zero, [], "entries with d_ino 0 (readdir_r and Go skip them)")
                m.close()

    def test_large_directory_is_read_page_by_page(self):
        """A directory of two LIST pages gives its first entries after one LIST; the second
        page is asked for when readdir reaches it; the listing then answers every stat."""
        m = harness.mount(self.addCleanup, MOTO, "s3://tree", args=["--read-only"], name="pages")
        os.stat(m.path / "many")
        lists = lambda: m.stats()["bucket_requests"]["list"]  # noqa: E731
        before = lists()
        fd = os.open(m.path / "many", os.O_RDONLY | os.O_DIRECTORY)
        try:
            calls = _getdents_calls(fd, 4096)
            first = next(calls)
            self.assertGreater(len(first), 2)
            self.assertEqual(lists(), before + 1, "readdir waited for every page")
            names = [n for _, n in first] + [n for call in calls for _, n in call]
        finally:
            os.close(fd)
        self.assertEqual(lists(), before + 2)
        names = [n for n in names if n not in (".", "..")]
        self.assertEqual(sorted(names), sorted(k.split("/")[1] for k in MANY))  # each once
        requests = m.stats()["bucket_requests"]
        for name in names:
            self.assertEqual(os.stat(m.path / "many" / name).st_size, len(MANY[f"many/{name}"]))
        self.assertEqual(m.stats()["bucket_requests"], requests, "a stat asked the bucket")


BAD_KEYS = {
    "bad/a//b": b"1",             # empty segment
    "bad//c": b"2",               # empty segment right after a dir
    "bad/./d": b"3",              # "." segment
    "bad/../e": b"4",             # ".." segment
    "bad/" + "n" * 256: b"5",     # a 256-byte name
    "bad/" + "d" * 256 + "/f": b"6",  # a 256-byte dir name
    "bad/" + "é" * 128: b"7",     # 256 bytes in UTF-8
}
GOOD_NEXT_TO_BAD = {
    "bad/good.txt": b"good\n",
    "bad/" + "m" * 255: b"255 bytes is fine\n",
    "bad/" + "é" * 127 + "x": b"255 bytes in UTF-8\n",
    "bad/sub/ok.txt": b"ok\n",
    "ok-at-root.txt": b"root\n",
}


class BadKeys(harness.WarmfsTestCase):
    def test_bad_keys_skipped_listing_intact(self):
        c = MOTO.client()
        harness.create_bucket(c, "badkeys")
        harness.put_many(c, "badkeys", {**BAD_KEYS, **GOOD_NEXT_TO_BAD})
        self.assertEqual(sorted(harness.list_keys(c, "badkeys")),
                         sorted([*BAD_KEYS, *GOOD_NEXT_TO_BAD]), "moto changed a key")
        m = self.mount(MOTO, "s3://badkeys")
        self.assertEqual(sorted(os.listdir(m.path)), ["bad", "ok-at-root.txt"])
        names = os.listdir(m.path / "bad")
        good = {k.split("/", 1)[1].split("/")[0] for k in GOOD_NEXT_TO_BAD if k.startswith("bad/")}
        self.assertEqual(good - set(names), set(), f"good names missing; listing: {names}")
        # "a" may show as an (empty) implicit dir of "bad/a//b"; nothing else may appear.
        self.assertEqual(set(names) - good - {"a"}, set(), "a bad key leaked into the listing")
        for n in names:
            self.assertLessEqual(len(n.encode()), 255)
            self.assertNotIn(n, ("", ".", ".."))
        if "a" in names:
            self.assertEqual(os.listdir(m.path / "bad" / "a"), [])
        ls = subprocess.run(["ls", "-a1", str(m.path / "bad")], capture_output=True, timeout=30,
                            env={"PATH": harness.BASE_PATH, "LC_ALL": "C"})
        self.assertEqual(ls.returncode, 0, ls.stderr)
        self.assertEqual(ls.stdout.decode().splitlines().count("."), 1)
        self.assertEqual(ls.stdout.decode().splitlines().count(".."), 1)
        for key, data in GOOD_NEXT_TO_BAD.items():
            with self.subTest(key=key):
                self.assertEqual((m.path / key).read_bytes(), data)
        find = subprocess.run(["find", str(m.path)], capture_output=True, timeout=30,
                              env={"PATH": harness.BASE_PATH})
        self.assertEqual(find.returncode, 0, find.stderr.decode(errors="replace"))
        with self.assertRaises(OSError) as cm:
            os.stat(m.path / "bad" / ("n" * 256))
        self.assertIn(cm.exception.errno, (errno.ENOENT, errno.ENAMETOOLONG))


class PrefixMount(harness.WarmfsTestCase):
    OBJECTS = {
        "sub/dir/x.txt": b"x in prefix\n",
        "sub/dir/y/z.bin": harness.make_data(70_000, 9),
        "sub/dir/": b"",
        "sub/dirty.txt": b"shares the prefix string, not the directory\n",
        "sub/dir-other/q.txt": b"q\n",
        "sub/other.txt": b"o\n",
        "top.txt": b"t\n",
    }

    @classmethod
    def setUpClass(cls):
        harness.create_bucket(MOTO.client(), "prefixed")
        harness.put_many(MOTO.client(), "prefixed", cls.OBJECTS)

    def check(self, url):
        m = self.mount(MOTO, url)
        self.assertEqual(harness.walk_tree(m.path), {"x.txt": ("f", 12), "y": ("d",),
                                                     "y/z.bin": ("f", 70_000)})
        self.assertEqual((m.path / "y/z.bin").read_bytes(), self.OBJECTS["sub/dir/y/z.bin"])
        with self.assertRaises(FileNotFoundError):
            os.stat(m.path / "dirty.txt")

    def test_prefix(self):
        self.check("s3://prefixed/sub/dir")

    def test_prefix_with_trailing_slash(self):
        self.check("s3://prefixed/sub/dir/")


class Options(harness.WarmfsTestCase):
    def test_owner_and_modes(self):
        m = self.mount(MOTO, "s3://tree", args=["--uid", "1234", "--gid", "2345",
                                                "--file-mode", "0640", "--dir-mode", "0750"])
        st = os.stat(m.path / "README.md")
        self.assertEqual((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)), (1234, 2345, 0o640))
        st = os.stat(m.path / "data")
        self.assertEqual((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)), (1234, 2345, 0o750))

    def test_profile_from_shared_credentials_file(self):
        m = harness.Mount(MOTO, "s3://tree", credentials=False, name="profile",
                          args=["--profile", "warmfs-it"])
        self.addCleanup(m.close)
        (m.home / ".aws").mkdir()
        (m.home / ".aws" / "credentials").write_text(
            f"[default]\naws_access_key_id = AKIADEFAULTWRONG\naws_secret_access_key = nope\n\n"
            f"[warmfs-it]\naws_access_key_id = {MOTO.key}\n"
            f"aws_secret_access_key = {MOTO.secret}\n")
        m.start()
        self.assertEqual((m.path / "README.md").read_bytes(), TREE["README.md"])


if __name__ == "__main__":
    unittest.main()
