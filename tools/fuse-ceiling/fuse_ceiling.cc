// fuse-ceiling: a do-nothing low-level FUSE filesystem that serves one read-only file from its
// own memory, mounted with the options warmfs uses (src/fuse/fuse_adapter.cc): max_read and
// max_write of 1 MiB, max_readahead and /sys/class/bdi/<dev>/read_ahead_kb of 4096 KiB,
// max_background 64, async reads, a multithreaded loop with clone_fd, keep_cache on open, and
// 60 s entry/attr timeouts. What it measures is what FUSE itself allows on this machine: a
// filesystem cannot answer reads faster than by copying from memory it already holds.
//
// The root holds --files N files named f0 .. f{N-1} (default one), all served from the same
// buffer: a pseudo-random pattern made at start (no I/O, no allocation per read), or the
// contents of --from FILE, read into memory once. Each file is its own inode, so each has its
// own page cache. Stays in the foreground; SIGTERM, SIGINT or an unmount end it. --ready-file
// gets the pid once the mount answers. Not part of warmfs: a benchmark tool only.
//
//   fuse-ceiling MOUNTPOINT [--size MiB] [--from FILE] [--files N] [--threads N]
//                [--read-ahead-kb KB] [--no-keep-cache] [--ready-file PATH]
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr fuse_ino_t kFirstFileIno = 2;       // f0; fI is kFirstFileIno + I
constexpr unsigned kRequestBytes = 1u << 20;  // max_read / max_write, as warmfs

struct Options {
  std::string mountpoint;
  unsigned files = 1;
  std::string from;
  std::string ready_file;
  size_t size = size_t{1024} << 20;
  unsigned threads = 16;
  unsigned read_ahead_kb = 4096;
  bool keep_cache = true;
};

// One per session, reached through fuse_req_userdata (no globals).
struct Ceiling {
  Options options;
  std::vector<char> bytes;
  bool is_file(fuse_ino_t ino) const {
    return ino >= kFirstFileIno && ino < kFirstFileIno + options.files;
  }
};

Ceiling& ceiling_of(fuse_req_t req) { return *static_cast<Ceiling*>(fuse_req_userdata(req)); }

struct stat attr_of(const Ceiling& c, fuse_ino_t ino) {
  struct stat st {};
  st.st_ino = ino;
  st.st_nlink = 1;
  st.st_uid = getuid();
  st.st_gid = getgid();
  if (ino == FUSE_ROOT_ID) {
    st.st_mode = S_IFDIR | 0555;
    st.st_nlink = 2;
  } else {
    st.st_mode = S_IFREG | 0444;
    st.st_size = static_cast<off_t>(c.bytes.size());
    st.st_blocks = static_cast<blkcnt_t>((c.bytes.size() + 511) / 512);
  }
  st.st_blksize = kRequestBytes;
  return st;
}

void op_init(void* userdata, fuse_conn_info* conn) {
  auto* c = static_cast<Ceiling*>(userdata);
  conn->max_write = kRequestBytes;
  conn->max_read = kRequestBytes;
  conn->max_readahead = c->options.read_ahead_kb * 1024;
  conn->max_background = 64;
  conn->congestion_threshold = 48;
  if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Ceiling& c = ceiling_of(req);
  fuse_entry_param e{};
  e.entry_timeout = 60;
  e.attr_timeout = 60;
  char* end = nullptr;
  const unsigned long i = name[0] == 'f' ? std::strtoul(name + 1, &end, 10) : 0;
  if (parent == FUSE_ROOT_ID && end != nullptr && end != name + 1 && *end == '\0' &&
      c.is_file(kFirstFileIno + i)) {
    e.ino = kFirstFileIno + i;
    e.generation = 1;
    e.attr = attr_of(c, e.ino);
  }  // else a negative entry (ino 0), cached for the entry timeout
  fuse_reply_entry(req, &e);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  if (ino != FUSE_ROOT_ID && !ceiling_of(req).is_file(ino))
    return (void)fuse_reply_err(req, ENOENT);
  struct stat st = attr_of(ceiling_of(req), ino);
  fuse_reply_attr(req, &st, 60);
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  if (ino != FUSE_ROOT_ID) return (void)fuse_reply_err(req, ENOTDIR);
  Ceiling& c = ceiling_of(req);
  std::vector<char> buf(size);
  size_t used = 0;
  const off_t total = 2 + static_cast<off_t>(c.options.files);
  for (off_t i = off; i < total; ++i) {
    struct stat st {};
    st.st_ino = i < 2 ? FUSE_ROOT_ID : kFirstFileIno + static_cast<fuse_ino_t>(i - 2);
    st.st_mode = i < 2 ? S_IFDIR : S_IFREG;
    const std::string name = i == 0 ? "." : i == 1 ? ".." : "f" + std::to_string(i - 2);
    size_t need = fuse_add_direntry(req, buf.data() + used, size - used, name.c_str(), &st, i + 1);
    if (need > size - used) break;
    used += need;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  if (!ceiling_of(req).is_file(ino)) return (void)fuse_reply_err(req, EISDIR);
  if ((fi->flags & O_ACCMODE) != O_RDONLY) return (void)fuse_reply_err(req, EROFS);
  fi->keep_cache = ceiling_of(req).options.keep_cache ? 1 : 0;
  fuse_reply_open(req, fi);
}

void op_read(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info*) {
  const std::vector<char>& bytes = ceiling_of(req).bytes;
  const size_t start = std::min(static_cast<size_t>(off), bytes.size());
  const size_t n = std::min(size, bytes.size() - start);
  fuse_reply_buf(req, bytes.data() + start, n);
}

void op_statfs(fuse_req_t req, fuse_ino_t) {
  struct statvfs st {};
  st.f_bsize = st.f_frsize = 4096;
  st.f_namemax = 255;
  fuse_reply_statfs(req, &st);
}

// The mount's "major:minor" from /proc/self/mountinfo, as warmfs finds it.
std::string mount_device(const std::string& mountpoint) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line, found;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    if (point == mountpoint) found = dev;
  }
  return found;
}

void raise_read_ahead(const Options& o) {
  const std::string dev = mount_device(o.mountpoint);
  if (dev.empty()) return;
  std::ofstream out("/sys/class/bdi/" + dev + "/read_ahead_kb");
  out << o.read_ahead_kb;
  out.flush();
  if (!out)
    std::fprintf(stderr, "fuse-ceiling: could not raise read_ahead_kb for %s\n", dev.c_str());
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(
      stderr,
      "fuse-ceiling: %s\nusage: fuse-ceiling MOUNTPOINT [--size MiB] [--from FILE] [--files N]"
      " [--threads N] [--read-ahead-kb KB] [--no-keep-cache] [--ready-file PATH]\n",
      why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--size")
      o.size = std::stoull(value()) << 20;
    else if (a == "--from")
      o.from = value();
    else if (a == "--files")
      o.files = static_cast<unsigned>(std::stoul(value()));
    else if (a == "--threads")
      o.threads = static_cast<unsigned>(std::stoul(value()));
    else if (a == "--read-ahead-kb")
      o.read_ahead_kb = static_cast<unsigned>(std::stoul(value()));
    else if (a == "--no-keep-cache")
      o.keep_cache = false;
    else if (a == "--ready-file")
      o.ready_file = value();
    else if (!a.empty() && a[0] == '-')
      usage(("unknown option " + a).c_str());
    else if (o.mountpoint.empty())
      o.mountpoint = a;
    else
      usage("one mountpoint only");
  }
  if (o.mountpoint.empty()) usage("no mountpoint");
  char* real = realpath(o.mountpoint.c_str(), nullptr);
  if (real == nullptr) usage(("no such directory " + o.mountpoint).c_str());
  o.mountpoint = real;
  std::free(real);
  return o;
}

bool load(Ceiling& c) {
  if (c.options.from.empty()) {
    c.bytes.resize(c.options.size);
    uint64_t x = 0x9e3779b97f4a7c15ull;  // a cheap pattern, not zeros (no shortcut anywhere)
    for (size_t i = 0; i + 8 <= c.bytes.size(); i += 8) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      std::memcpy(c.bytes.data() + i, &x, 8);
    }
    return true;
  }
  std::ifstream in(c.options.from, std::ios::binary);
  if (!in) return false;
  c.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Ceiling c;
  c.options = parse(argc, argv);
  if (!load(c)) {
    std::fprintf(stderr, "fuse-ceiling: cannot read %s\n", c.options.from.c_str());
    return 1;
  }
  const std::string mount_opts =
      "fsname=fuse-ceiling,subtype=ceiling,ro,default_permissions,max_read=" +
      std::to_string(kRequestBytes);
  std::vector<std::string> argv_s = {"fuse-ceiling", "-o", mount_opts};
  std::vector<char*> args_v;
  for (auto& a : argv_s) args_v.push_back(a.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(args_v.size()), args_v.data());

  fuse_lowlevel_ops ops{};
  ops.init = op_init;
  ops.lookup = op_lookup;
  ops.getattr = op_getattr;
  ops.readdir = op_readdir;
  ops.open = op_open;
  ops.read = op_read;
  ops.statfs = op_statfs;
  fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, &c);
  if (se == nullptr) return 1;
  if (fuse_set_signal_handlers(se) != 0 ||
      fuse_session_mount(se, c.options.mountpoint.c_str()) != 0) {
    fuse_session_destroy(se);
    std::fprintf(stderr, "fuse-ceiling: cannot mount on %s\n", c.options.mountpoint.c_str());
    return 1;
  }
  raise_read_ahead(c.options);
  std::thread ready([&c] {
    struct stat st {};
    if (::stat(c.options.mountpoint.c_str(), &st) == 0 && !c.options.ready_file.empty()) {
      std::ofstream(c.options.ready_file) << getpid() << "\n";
    }
  });
  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(cfg, 1);
  fuse_loop_cfg_set_max_threads(cfg, c.options.threads);
  fuse_loop_cfg_set_idle_threads(cfg, std::min(c.options.threads, 8u));
  int rc = fuse_session_loop_mt(se, cfg);
  fuse_loop_cfg_destroy(cfg);
  ready.join();
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  return (rc == 0 || rc == SIGTERM || rc == SIGINT || rc == SIGHUP) ? 0 : 1;
}
