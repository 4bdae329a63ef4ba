#define FUSE_USE_VERSION 314
#include "fuse/fuse_adapter.h"

#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <span>
#include <vector>

#include "common/errno_map.h"
#include "common/log.h"
#include "fuse/callback_guard.h"
#include "warmfs/control_ioctl.h"

namespace warmfs {
namespace {

using Session = FuseCallbackState;

// Every reply goes through here, so the callback guard (callback_guard.h) knows the request
// has been answered.
template <typename Reply, typename... Args>
decltype(auto) reply(Reply fn, fuse_req_t req, Args&&... args) {
  t_fuse_replied = true;
  return fn(req, std::forward<Args>(args)...);
}

Session& session_of(fuse_req_t req) { return *static_cast<Session*>(fuse_req_userdata(req)); }

// The thread that made the request (readdir_policy.h learns per caller).
uint32_t caller_of(fuse_req_t req) { return static_cast<uint32_t>(fuse_req_ctx(req)->pid); }

// d_ino of an entry listed without attributes: libfuse's FUSE_UNKNOWN_INO.
constexpr ino_t kUnknownIno = 0xffffffff;

// A handle given to the kernel, and one it gave back (released).
uint64_t keep_file(Session& s, std::unique_ptr<FileHandle> h) { return s.keep_file(std::move(h)); }
std::unique_ptr<FileHandle> take_file(Session& s, uint64_t fh) {
  {
    std::lock_guard lock(s.open->mu);
    s.open->files.erase(fh);
  }
  return std::unique_ptr<FileHandle>(reinterpret_cast<FileHandle*>(fh));
}
uint64_t keep_dir(Session& s, OpenDirPtr dir) { return s.keep_dir(std::move(dir)); }
void drop_dir(Session& s, uint64_t fh) {
  {
    std::lock_guard lock(s.open->mu);
    s.open->dirs.erase(fh);
  }
  delete reinterpret_cast<OpenDirPtr*>(fh);
}

struct stat to_stat(const Attr& a) {
  struct stat st {};
  st.st_ino = a.ino;
  st.st_mode = a.mode;
  st.st_nlink = a.nlink;
  st.st_uid = a.uid;
  st.st_gid = a.gid;
  st.st_size = static_cast<off_t>(a.size);
  st.st_blksize = 1 << 20;
  st.st_blocks = static_cast<blkcnt_t>((a.size + 511) / 512);
  st.st_rdev = static_cast<dev_t>(a.rdev);
  st.st_mtim.tv_sec = a.mtime_sec;
  st.st_mtim.tv_nsec = a.mtime_nsec;
  st.st_atim.tv_sec = a.atime_sec;
  st.st_atim.tv_nsec = a.atime_nsec;
  st.st_ctim.tv_sec = a.ctime_sec;
  st.st_ctim.tv_nsec = a.ctime_nsec;
  return st;
}

// The caller's owner and mode (the kernel has applied its umask): what a new node carries.
NewNodeAttrs new_node_attrs(fuse_req_t req, mode_t mode) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  return NewNodeAttrs{static_cast<uint32_t>(mode & 07777), static_cast<uint32_t>(ctx->uid),
                      static_cast<uint32_t>(ctx->gid)};
}

fuse_entry_param to_entry(const Session& s, const Attr& a) {
  fuse_entry_param e{};
  e.ino = a.ino;
  e.generation = 1;
  e.attr = to_stat(a);
  e.attr_timeout = s.options.attr_timeout_sec;
  e.entry_timeout = s.options.entry_timeout_sec;
  return e;
}

void reply_status(fuse_req_t req, const Status& st) { reply(fuse_reply_err, req, to_errno(st)); }

void op_init(void* userdata, fuse_conn_info* conn) {
  auto* s = static_cast<Session*>(userdata);
  const unsigned req_bytes = s->options.max_request_bytes;
  // libfuse derives max_pages from max_write, and refuses the session unless max_read
  // matches the max_read mount option.
  conn->max_write = req_bytes;
  conn->max_read = req_bytes;
  conn->max_readahead = s->options.read_ahead_kb * 1024;
  conn->max_background = 64;
  conn->congestion_threshold = 48;
  auto want = [conn](unsigned cap) {
    if (conn->capable & cap) conn->want |= cap;
  };
  want(FUSE_CAP_ASYNC_READ);
  want(FUSE_CAP_READDIRPLUS);
  want(FUSE_CAP_PARALLEL_DIROPS);
  // O_TRUNC arrives with open(), not as a separate truncate that would upload an empty object.
  want(FUSE_CAP_ATOMIC_O_TRUNC);
  // Page-cache coherence is ours to manage with keep_cache per open (by ETag).
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  Session& s = session_of(req);
  auto r = s.fs.lookup(parent, name);
  if (r.is_ok()) {
    s.readdir->looked_up(caller_of(req), parent, S_ISDIR(r->mode));
    fuse_entry_param e = to_entry(s, *r);
    reply(fuse_reply_entry, req, &e);
  } else if (r.code() == Errc::kNotFound) {
    // A negative entry the kernel may cache for the negative timeout.
    fuse_entry_param e{};
    e.ino = 0;
    e.entry_timeout = s.options.negative_timeout_sec;
    reply(fuse_reply_entry, req, &e);
  } else {
    log::warn("lookup of {:?} failed: {}", name, r.status().to_string());
    reply_status(req, r.status());
  }
}

void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  session_of(req).fs.forget(ino, nlookup);
  reply(fuse_reply_none, req);
}

void op_forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  Session& s = session_of(req);
  for (size_t i = 0; i < count; ++i) s.fs.forget(forgets[i].ino, forgets[i].nlookup);
  reply(fuse_reply_none, req);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* /*fi*/) {
  Session& s = session_of(req);
  auto r = s.fs.getattr(ino);
  if (!r.is_ok()) return reply_status(req, r.status());
  struct stat st = to_stat(*r);
  reply(fuse_reply_attr, req, &st, s.options.attr_timeout_sec);
}

void op_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto r = session_of(req).fs.opendir(ino);
  if (!r.is_ok()) return reply_status(req, r.status());
  fi->fh = keep_dir(session_of(req), std::move(r).value());
  if (reply(fuse_reply_open, req, fi) == -ENOENT) drop_dir(session_of(req), fi->fh);
}

// Offsets: 1 is ".", 2 is "..", 3 + i is entry i; off is the entry to start after.
// Entries without attributes (a READDIR, or a READDIRPLUS the policy answers with names
// only) carry kUnknownIno as d_ino, never 0: readdir_r() in glibc and Go's os.ReadDir skip
// entries whose d_ino is 0, as deleted ones. A directory read page by page may fail on a
// later page: the entries before it are given, and the next call reports the failure.
void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi,
                bool plus) {
  Session& s = session_of(req);
  const OpenDir& dir = **reinterpret_cast<OpenDirPtr*>(fi->fh);
  const bool attributes = plus && s.readdir->attributes_for(caller_of(req), ino);
  std::vector<char> buf(size);
  size_t used = 0;
  std::string name_buf;  // an entry's name, NUL-terminated for libfuse
  for (size_t i = static_cast<size_t>(off);; ++i) {
    const char* name;
    struct stat st {};
    fuse_entry_param e{};
    const DirEntry* entry = nullptr;
    if (i == 0) {
      name = ".";
      st.st_ino = ino;
      st.st_mode = S_IFDIR;
    } else if (i == 1) {
      name = "..";
      st.st_ino = s.fs.parent_of(ino);
      st.st_mode = S_IFDIR;
    } else {
      auto r = dir.at(i - 2);
      if (!r.is_ok()) {
        if (used == 0) return reply_status(req, r.status());
        break;
      }
      entry = *r;
      if (entry == nullptr) break;  // the end
      name_buf.assign(entry->name.view());
      name = name_buf.c_str();
      st.st_ino = kUnknownIno;
      st.st_mode = entry->is_dir ? S_IFDIR : S_IFREG;
    }
    char* dst = buf.data() + used;
    const size_t room = size - used;
    size_t need;
    if (!plus) {
      need = fuse_add_direntry(req, dst, room, name, &st, static_cast<off_t>(i + 1));
      if (need > room) break;
    } else {
      e.attr = st;
      // Check the entry fits before looking it up: a lookup counts a reference the kernel
      // only learns of if the entry reaches it.
      need = fuse_add_direntry_plus(req, nullptr, 0, name, &e, 0);
      if (need > room) break;
      if (entry != nullptr && attributes) {
        auto r = s.fs.lookup(ino, entry->name);
        if (r.is_ok()) e = to_entry(s, *r);  // else: a name only, no attributes (ino 0)
      }
      fuse_add_direntry_plus(req, dst, room, name, &e, static_cast<off_t>(i + 1));
    }
    used += need;
  }
  reply(fuse_reply_buf, req, buf.data(), used);
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  do_readdir(req, ino, size, off, fi, false);
}

void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  do_readdir(req, ino, size, off, fi, true);
}

void op_releasedir(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
  drop_dir(session_of(req), fi->fh);
  reply(fuse_reply_err, req, 0);
}

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto r = session_of(req).fs.open(ino, fi->flags);
  if (!r.is_ok()) return reply_status(req, r.status());
  fi->keep_cache = r->keep_cache ? 1 : 0;
  fi->fh = keep_file(session_of(req), std::move(r->handle));
  if (reply(fuse_reply_open, req, fi) == -ENOENT) {
    session_of(req).fs.release(take_file(session_of(req), fi->fh));
  }
}

void op_read(fuse_req_t req, fuse_ino_t /*ino*/, size_t size, off_t off, fuse_file_info* fi) {
  Session& s = session_of(req);
  auto* handle = reinterpret_cast<FileHandle*>(fi->fh);
  // Replies straight from the cached chunks (no copy in warmfs); the vectors are per FUSE
  // worker thread and reused, and the slices keep their chunks alive until the reply is sent.
  thread_local std::vector<ChunkSlice> slices;
  thread_local std::vector<iovec> iov;
  auto r = s.fs.read_slices(*handle, static_cast<uint64_t>(off), size, slices);
  if (!r.is_ok()) return reply_status(req, r.status());
  iov.clear();
  for (const ChunkSlice& sl : slices) {
    iov.push_back(iovec{const_cast<std::byte*>(sl.chunk->bytes.data() + sl.offset), sl.length});
  }
  reply(fuse_reply_iov, req, iov.data(), static_cast<int>(iov.size()));
  slices.clear();
}

void op_release(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
  session_of(req).fs.release(take_file(session_of(req), fi->fh));
  reply(fuse_reply_err, req, 0);
}

void op_statfs(fuse_req_t req, fuse_ino_t /*ino*/) {
  StatfsResult r = session_of(req).fs.statfs();
  struct statvfs st {};
  st.f_bsize = r.block_size;
  st.f_frsize = r.block_size;
  st.f_blocks = r.blocks;
  st.f_bfree = r.blocks_free;
  st.f_bavail = r.blocks_free;
  st.f_files = r.files;
  st.f_ffree = r.files_free;
  st.f_favail = r.files_free;
  st.f_namemax = r.name_max;
  reply(fuse_reply_statfs, req, &st);
}

void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  auto r = session_of(req).fs.getxattr(ino, name);
  if (!r.is_ok()) {
    reply(fuse_reply_err, req, r.code() == Errc::kNotFound ? ENODATA : to_errno(r.status()));
    return;
  }
  const std::string& v = *r;
  if (size == 0) {
    // Counters may grow between the size probe and the read: leave room.
    reply(fuse_reply_xattr, req, v.size() + 1024);
  } else if (size < v.size()) {
    reply(fuse_reply_err, req, ERANGE);
  } else {
    reply(fuse_reply_buf, req, v.data(), v.size());
  }
}

void op_listxattr(fuse_req_t req, fuse_ino_t /*ino*/, size_t size) {
  // The stats attributes are not listed, so cp -a and rsync -X do not copy them.
  if (size == 0)
    reply(fuse_reply_xattr, req, 0);
  else
    reply(fuse_reply_buf, req, nullptr, 0);
}

void reply_entry(fuse_req_t req, const Result<Attr>& r) {
  if (!r.is_ok()) return reply_status(req, r.status());
  fuse_entry_param e = to_entry(session_of(req), *r);
  reply(fuse_reply_entry, req, &e);
}

void op_create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
               fuse_file_info* fi) {
  Session& s = session_of(req);
  if (!S_ISREG(mode)) {
    reply(fuse_reply_err, req, EPERM);
    return;
  }
  auto r = s.fs.create(parent, name, fi->flags, new_node_attrs(req, mode));
  if (!r.is_ok()) return reply_status(req, r.status());
  fuse_entry_param e = to_entry(s, r->attr);
  fi->keep_cache = 0;
  fi->fh = keep_file(s, std::move(r->open.handle));
  if (reply(fuse_reply_create, req, &e, fi) == -ENOENT) s.fs.release(take_file(s, fi->fh));
}

void op_mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  // A regular file is created and closed at once (an empty object); a FIFO, socket or device
  // node is an empty object with its type in its metadata (the kernel serves it).
  reply_entry(
      req, session_of(req).fs.mknod(parent, name, mode & S_IFMT, rdev, new_node_attrs(req, mode)));
}

void op_write(fuse_req_t req, fuse_ino_t /*ino*/, const char* buf, size_t size, off_t off,
              fuse_file_info* fi) {
  auto* handle = reinterpret_cast<FileHandle*>(fi->fh);
  auto r = session_of(req).fs.write(*handle, static_cast<uint64_t>(off),
                                    std::span(reinterpret_cast<const std::byte*>(buf), size));
  if (!r.is_ok()) return reply_status(req, r.status());
  reply(fuse_reply_write, req, *r);
}

void op_flush(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
  // Every close() of a descriptor: uploads what its writes changed, and says whether that
  // worked (close's return value).
  auto* handle = reinterpret_cast<FileHandle*>(fi->fh);
  if (!handle->writable()) {
    reply(fuse_reply_err, req, 0);
    return;
  }
  reply_status(req, session_of(req).fs.flush(*handle));
}

void op_fsync(fuse_req_t req, fuse_ino_t /*ino*/, int /*datasync*/, fuse_file_info* fi) {
  auto* handle = reinterpret_cast<FileHandle*>(fi->fh);
  reply_status(req, session_of(req).fs.fsync(*handle));
}

void op_ioctl(fuse_req_t req, fuse_ino_t /*ino*/, unsigned int cmd, void* /*arg*/,
              fuse_file_info* fi, unsigned flags, const void* in_buf, size_t in_bufsz,
              size_t /*out_bufsz*/) {
  // The order file's channel for read-only mounts (warmfs/control_ioctl.h); nothing else
  // answers an ioctl.
  auto* handle = (flags & FUSE_IOCTL_DIR) != 0 ? nullptr : reinterpret_cast<FileHandle*>(fi->fh);
  if (handle == nullptr || !handle->control()) {
    reply(fuse_reply_err, req, ENOTTY);
    return;
  }
  Filesystem& fs = session_of(req).fs;
  Status st;
  if (cmd == WARMFS_IOC_ORDER_APPEND) {
    warmfs_order_chunk chunk;
    if (in_bufsz < sizeof chunk) {
      reply(fuse_reply_err, req, EINVAL);
      return;
    }
    std::memcpy(&chunk, in_buf, sizeof chunk);
    if (chunk.length > WARMFS_ORDER_CHUNK_BYTES) {
      reply(fuse_reply_err, req, EINVAL);
      return;
    }
    st = fs.order_append(*handle, std::as_bytes(std::span(chunk.bytes, chunk.length)));
  } else if (cmd == WARMFS_IOC_ORDER_PUBLISH) {
    st = fs.order_publish(*handle);
  } else {
    reply(fuse_reply_err, req, ENOTTY);
    return;
  }
  if (!st.is_ok()) {
    reply_status(req, st);
    return;
  }
  reply(fuse_reply_ioctl, req, 0, nullptr, size_t{0});
}

void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi) {
  Session& s = session_of(req);
  SetAttrRequest r;
  if (to_set & FUSE_SET_ATTR_SIZE) r.size = static_cast<uint64_t>(attr->st_size);
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const Timespec now_ts{now.tv_sec, static_cast<uint32_t>(now.tv_nsec)};
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
    r.mtime = now_ts;
  } else if (to_set & FUSE_SET_ATTR_MTIME) {
    r.mtime = Timespec{attr->st_mtim.tv_sec, static_cast<uint32_t>(attr->st_mtim.tv_nsec)};
  }
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
    r.atime = now_ts;
  } else if (to_set & FUSE_SET_ATTR_ATIME) {
    r.atime = Timespec{attr->st_atim.tv_sec, static_cast<uint32_t>(attr->st_atim.tv_nsec)};
  }
  if (to_set & FUSE_SET_ATTR_MODE) r.mode = static_cast<uint32_t>(attr->st_mode & 07777);
  if (to_set & FUSE_SET_ATTR_UID) r.uid = static_cast<uint32_t>(attr->st_uid);
  if (to_set & FUSE_SET_ATTR_GID) r.gid = static_cast<uint32_t>(attr->st_gid);
  auto* handle = fi != nullptr ? reinterpret_cast<FileHandle*>(fi->fh) : nullptr;
  auto res = s.fs.setattr(ino, r, handle);
  if (!res.is_ok()) return reply_status(req, res.status());
  struct stat st = to_stat(*res);
  reply(fuse_reply_attr, req, &st, s.options.attr_timeout_sec);
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  reply_entry(req, session_of(req).fs.mkdir(parent, name, new_node_attrs(req, mode)));
}

void op_unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  reply_status(req, session_of(req).fs.unlink(parent, name));
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  reply_status(req, session_of(req).fs.rmdir(parent, name));
}

void op_rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent,
               const char* new_name, unsigned flags) {
  reply_status(req, session_of(req).fs.rename(parent, name, new_parent, new_name, flags));
}

// Symlinks are objects in s3fs's layout (the target as the body, S_IFLNK in the mode).
void op_symlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name) {
  reply_entry(req, session_of(req).fs.symlink(parent, name, target, new_node_attrs(req, 0777)));
}

void op_readlink(fuse_req_t req, fuse_ino_t ino) {
  auto r = session_of(req).fs.readlink(ino);
  if (!r.is_ok()) return reply_status(req, r.status());
  reply(fuse_reply_readlink, req, r->c_str());
}

// Hard links have no S3 counterpart: EPERM, as POSIX says for a filesystem that does not
// support them. Extended attributes cannot be set: ENOTSUP.
void reply_not_permitted(fuse_req_t req) {
  Status st = session_of(req).fs.check_writable();
  reply_status(req, st.is_ok() ? Status(Errc::kNotPermitted, "not supported") : st);
}
void op_link(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { reply_not_permitted(req); }
void op_setxattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) {
  Status st = session_of(req).fs.check_writable();
  reply_status(req, st.is_ok() ? Status(Errc::kNotSupported, "no extended attributes") : st);
}
void op_removexattr(fuse_req_t req, fuse_ino_t, const char*) {
  Status st = session_of(req).fs.check_writable();
  reply_status(req, st.is_ok() ? Status(Errc::kNotSupported, "no extended attributes") : st);
}

// Each callback runs inside guard_callback: an exception from below is answered with EIO
// (ENOMEM when out of memory) and logged, never let into libfuse.
#define WARMFS_GUARDED(op)                                                             \
  [](fuse_req_t req, auto... args) {                                                   \
    guard_callback(                                                                    \
        #op, [&] { op(req, args...); }, [req](int err) { fuse_reply_err(req, err); }); \
  }
// forget takes no reply, not even after an exception.
#define WARMFS_GUARDED_NO_REPLY(op)                                            \
  [](fuse_req_t req, auto... args) {                                           \
    guard_callback(                                                            \
        #op, [&] { op(req, args...); }, [req](int) { fuse_reply_none(req); }); \
  }

fuse_lowlevel_ops make_ops() {
  fuse_lowlevel_ops ops{};
  ops.init = [](void* userdata, fuse_conn_info* conn) {
    guard_callback(
        "init", [&] { op_init(userdata, conn); }, [](int) {});
  };
  ops.lookup = WARMFS_GUARDED(op_lookup);
  ops.forget = WARMFS_GUARDED_NO_REPLY(op_forget);
  ops.forget_multi = WARMFS_GUARDED_NO_REPLY(op_forget_multi);
  ops.getattr = WARMFS_GUARDED(op_getattr);
  ops.opendir = WARMFS_GUARDED(op_opendir);
  ops.readdir = WARMFS_GUARDED(op_readdir);
  ops.readdirplus = WARMFS_GUARDED(op_readdirplus);
  ops.releasedir = WARMFS_GUARDED(op_releasedir);
  ops.open = WARMFS_GUARDED(op_open);
  ops.read = WARMFS_GUARDED(op_read);
  ops.release = WARMFS_GUARDED(op_release);
  ops.statfs = WARMFS_GUARDED(op_statfs);
  ops.getxattr = WARMFS_GUARDED(op_getxattr);
  ops.listxattr = WARMFS_GUARDED(op_listxattr);
  ops.mkdir = WARMFS_GUARDED(op_mkdir);
  ops.mknod = WARMFS_GUARDED(op_mknod);
  ops.unlink = WARMFS_GUARDED(op_unlink);
  ops.rmdir = WARMFS_GUARDED(op_rmdir);
  ops.symlink = WARMFS_GUARDED(op_symlink);
  ops.readlink = WARMFS_GUARDED(op_readlink);
  ops.link = WARMFS_GUARDED(op_link);
  ops.rename = WARMFS_GUARDED(op_rename);
  ops.create = WARMFS_GUARDED(op_create);
  ops.setattr = WARMFS_GUARDED(op_setattr);
  ops.write = WARMFS_GUARDED(op_write);
  ops.flush = WARMFS_GUARDED(op_flush);
  ops.fsync = WARMFS_GUARDED(op_fsync);
  ops.ioctl = WARMFS_GUARDED(op_ioctl);
  ops.setxattr = WARMFS_GUARDED(op_setxattr);
  ops.removexattr = WARMFS_GUARDED(op_removexattr);
  return ops;
}

#undef WARMFS_GUARDED
#undef WARMFS_GUARDED_NO_REPLY

}  // namespace

void fill_fuse_ops(fuse_lowlevel_ops& ops) { ops = make_ops(); }

uint64_t FuseCallbackState::keep_file(std::unique_ptr<FileHandle> h) {
  const auto fh = reinterpret_cast<uint64_t>(h.release());
  std::lock_guard lock(open->mu);
  open->files.insert(fh);
  return fh;
}

uint64_t FuseCallbackState::keep_dir(OpenDirPtr dir) {
  const auto fh = reinterpret_cast<uint64_t>(new OpenDirPtr(std::move(dir)));
  std::lock_guard lock(open->mu);
  open->dirs.insert(fh);
  return fh;
}

void release_open_handles(FuseCallbackState& state) {
  std::unordered_set<uint64_t> files, dirs;
  {
    std::lock_guard lock(state.open->mu);
    files.swap(state.open->files);
    dirs.swap(state.open->dirs);
  }
  for (uint64_t fh : files)
    state.fs.release(std::unique_ptr<FileHandle>(reinterpret_cast<FileHandle*>(fh)));
  for (uint64_t fh : dirs) delete reinterpret_cast<OpenDirPtr*>(fh);
  if (!files.empty() || !dirs.empty()) {
    log::info("released {} files and {} directories the kernel still held open", files.size(),
              dirs.size());
  }
}

}  // namespace warmfs
