// Restartable sessions (fuse/handover.h): the custom read and writev, the journal, the handle
// tokens, the INIT replayed to a later daemon and the resend of requests in flight.
#define FUSE_USE_VERSION 314
#include "fuse/handover.h"

#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "fuse/fuse_session.h"
#include "fuse/handover_journal.h"
#include "fuse/session_loop.h"

namespace warmfs {
namespace {

// FUSE_NOTIFY_RESEND (kernel 6.9; Debian 12's linux/fuse.h predates it): the kernel queues
// again every request read and not answered, with FUSE_UNIQUE_RESEND set in their unique.
constexpr int32_t kNotifyResend = 7;
constexpr uint64_t kUniqueResend = 1ULL << 63;
// A handle token: the daemon's generation above this many bits, a counter below.
constexpr int kTokenCounterBits = 40;
// The journal is rewritten from the tables once it grows past this (a lookup appends a line
// each time the kernel asks again: once per TTL for a name in use).
constexpr uint64_t kCompactAt = 64ull << 20;

bool opened_for_writing(uint32_t flags) {
  return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0;
}

// The generation a file holds; 0 when it holds none.
uint64_t parse_generation(const std::string& text) {
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  return ec == std::errc() && (end == text.data() + text.size() || *end == '\n') ? n : 0;
}

// What the kernel asked, kept from a request until its reply.
struct Pending {
  uint32_t opcode = 0;
  uint64_t nodeid = 0;
  std::string name;
  uint64_t new_parent = 0;  // RENAME
  std::string new_name;     // RENAME
  uint32_t flags = 0;       // OPEN, CREATE
};

class Handover {
 public:
  Handover(Filesystem& fs, int fd, std::string state_dir)
      : fs_(fs), fd_(fd), dir_(std::move(state_dir)), journal_(dir_ + "/journal") {}

  // Reads the state directory: this daemon's generation, and, after a restart, the INIT and
  // the journal, whose nodes are adopted and whose handles are known as an earlier daemon's.
  Status start();
  bool restarted() const { return restarted_; }
  // Where the handles reopened for an earlier daemon's are kept, so that those the kernel
  // never releases are released when the session ends (release_open_handles). Set before
  // the loop starts.
  void set_callbacks(FuseCallbackState* callbacks) { callbacks_ = callbacks; }

  ssize_t read(void* buf, size_t len);
  ssize_t writev(iovec* iov, int count);

 private:
  // Notes what a reply will need, translates handle tokens; true if the request was
  // answered here (it is not given to libfuse).
  bool take_request(char* buf, size_t n);
  // Translates the handle token at fh; true if answered here. mu_ held.
  bool translate_fh(const fuse_in_header& in, uint64_t* fh, bool* has_fh);
  void answer(uint64_t unique, int err);
  uint64_t new_token(uint64_t local, uint64_t nodeid, uint32_t flags, bool dir);  // mu_ held
  // Adopts the nodes an earlier daemon's journal names; keeps its handles as its.
  void replay(handover::JournalState earlier);
  // Rewrites the journal from what it says now once it has grown past kCompactAt; mu_ held.
  void maybe_compact();

  Filesystem& fs_;
  FuseCallbackState* callbacks_ = nullptr;
  const int fd_;
  const std::string dir_;
  uint64_t generation_ = 1;
  bool restarted_ = false;
  std::string init_;  // the kernel's INIT request (after a restart: fed to libfuse first)
  uint64_t init_unique_ = 0;

  std::mutex init_mu_;
  std::condition_variable init_cv_;
  bool init_read_ = false;  // guarded by init_mu_
  bool init_done_ = false;  // guarded by init_mu_: reads wait for it once INIT is read

  mutable std::mutex mu_;  // guards what follows
  handover::JournalFile journal_;
  handover::JournalState state_;  // what the journal says: nodes, and handles by token
  uint64_t next_token_ = 1;
  std::unordered_map<uint64_t, Pending> pending_;  // by unique
};

Status Handover::start() {
  init_ = handover::read_whole_file(dir_ + "/init");
  restarted_ = init_.size() >= sizeof(fuse_in_header);
  handover::JournalState earlier;
  if (restarted_) {
    fuse_in_header in;
    std::memcpy(&in, init_.data(), sizeof in);
    init_unique_ = in.unique;
    earlier = handover::parse_journal(handover::read_whole_file(dir_ + "/journal"));
  }
  // Above every earlier daemon's: the file says how many served, and a handle in the journal
  // names its daemon's generation too (should the file be lost or torn).
  generation_ = parse_generation(handover::read_whole_file(dir_ + "/generation")) + 1;
  if (!earlier.handles.empty())
    generation_ = std::max(generation_, (earlier.handles.rbegin()->first >> kTokenCounterBits) + 1);
  const std::string gen = std::to_string(generation_);
  if (!handover::write_file_atomic(dir_ + "/generation", gen.data(), gen.size()))
    return Status(Errc::kIo, "cannot write " + dir_ + "/generation: " + std::strerror(errno));
  if (restarted_) replay(std::move(earlier));
  std::lock_guard lock(mu_);
  return journal_.rewrite(handover::compact_journal(state_));
}

void Handover::replay(handover::JournalState earlier) {
  // Parents before children: a node is adopted once the id of its parent names it.
  size_t adopted = 0, lost = 0;
  std::map<uint64_t, int> state;  // 1 adopted, 2 failed
  auto& nodes = earlier.nodes;
  std::function<bool(uint64_t)> adopt = [&](uint64_t node) -> bool {
    if (node == FUSE_ROOT_ID) return true;
    auto s = state.find(node);
    if (s != state.end()) return s->second == 1;
    state[node] = 2;  // a cycle (in a damaged journal) fails
    auto it = nodes.find(node);
    if (it == nodes.end() || !adopt(it->second.parent)) return false;
    Status st = fs_.adopt(node, it->second.parent, it->second.name, it->second.nlookup);
    if (!st.is_ok()) {
      log::warn("restart: node {} ({:?} in node {}) is not found again: {}", node, it->second.name,
                it->second.parent, st.to_string());
      ++lost;
      return false;
    }
    state[node] = 1;
    ++adopted;
    return true;
  };
  for (const auto& [node, _] : nodes) adopt(node);
  for (auto it = nodes.begin(); it != nodes.end();) {
    it = state[it->first] == 1 ? std::next(it) : nodes.erase(it);
  }
  std::lock_guard lock(mu_);
  state_ = std::move(earlier);
  log::info(
      "restart: generation {}, {} nodes taken over ({} lost), {} open handles of the "
      "daemon before",
      generation_, adopted, lost, state_.handles.size());
}

void Handover::maybe_compact() {
  if (journal_.bytes() < kCompactAt) return;
  if (Status st = journal_.rewrite(handover::compact_journal(state_)); !st.is_ok())
    log::warn("restart journal: cannot compact it: {}", st.to_string());
}

uint64_t Handover::new_token(uint64_t local, uint64_t nodeid, uint32_t flags, bool dir) {
  const uint64_t token = (generation_ << kTokenCounterBits) | next_token_++;
  const handover::JournalHandle h{nodeid, flags, dir, local};
  state_.handles[token] = h;
  journal_.append(handover::handle_line(token, h));
  return token;
}

void Handover::answer(uint64_t unique, int err) {
  fuse_out_header out{};
  out.len = sizeof out;
  out.error = -err;
  out.unique = unique;
  if (::write(fd_, &out, sizeof out) < 0 && errno != ENOENT)
    log::warn("restart: cannot answer a request: {}", std::strerror(errno));
}

ssize_t Handover::read(void* buf, size_t len) {
  {
    std::unique_lock lock(init_mu_);
    if (restarted_ && !init_read_) {
      // libfuse's first request is the INIT the kernel sent the first daemon.
      init_read_ = true;
      if (init_.size() > len) {
        errno = EINVAL;
        return -1;
      }
      std::memcpy(buf, init_.data(), init_.size());
      std::lock_guard l(mu_);
      pending_[init_unique_] = Pending{FUSE_INIT};
      return static_cast<ssize_t>(init_.size());
    }
    // No other request reaches libfuse while it handles INIT.
    init_cv_.wait(lock, [this] { return !init_read_ || init_done_; });
  }
  while (true) {
    const ssize_t n = ::read(fd_, buf, len);
    if (n < static_cast<ssize_t>(sizeof(fuse_in_header))) return n;
    auto* in = static_cast<fuse_in_header*>(buf);
    if (in->opcode == FUSE_INIT) {
      std::lock_guard lock(init_mu_);
      init_read_ = true;
      if (!handover::write_file_atomic(dir_ + "/init", buf, static_cast<size_t>(n)))
        log::error("restart: cannot keep the INIT request: a restart will not work");
      std::lock_guard l(mu_);
      pending_[in->unique] = Pending{FUSE_INIT};
      return n;
    }
    if (!take_request(static_cast<char*>(buf), static_cast<size_t>(n))) return n;
  }
}

bool Handover::translate_fh(const fuse_in_header& in, uint64_t* fh, bool* has_fh) {
  auto it = state_.handles.find(*fh);
  const uint32_t op = in.opcode;
  if (it != state_.handles.end() && it->second.local != 0) {
    const uint64_t token = *fh;
    *fh = it->second.local;
    if (op == FUSE_RELEASE || op == FUSE_RELEASEDIR) {
      state_.handles.erase(it);
      journal_.append(handover::release_line(token));
    }
    return false;
  }
  // A handle of an earlier daemon (or none this mount knows).
  const bool known = it != state_.handles.end();
  const handover::JournalHandle h = known ? it->second : handover::JournalHandle{};
  const bool writing = known && opened_for_writing(h.flags);
  switch (op) {
    case FUSE_RELEASE:
    case FUSE_RELEASEDIR:
      if (known) {
        journal_.append(handover::release_line(*fh));
        state_.handles.erase(it);
      }
      answer(in.unique, 0);
      return true;
    case FUSE_READ:
      if (known && !h.dir && !writing) {
        auto r = fs_.open(h.nodeid, O_RDONLY);
        if (!r.is_ok()) {
          log::warn("restart: cannot reopen {} for reading: {}", state_.path_of(h.nodeid),
                    r.status().to_string());
          answer(in.unique, EIO);
          return true;
        }
        it->second.local = callbacks_->keep_file(std::move(r->handle));
        *fh = it->second.local;
        return false;
      }
      break;
    case FUSE_READDIR:
    case FUSE_READDIRPLUS:
      if (known && h.dir) {
        auto r = fs_.opendir(h.nodeid);
        if (!r.is_ok()) {
          answer(in.unique, EIO);
          return true;
        }
        it->second.local = callbacks_->keep_dir(std::move(r).value());
        *fh = it->second.local;
        return false;
      }
      break;
    case FUSE_FLUSH:
    case FUSE_FSYNC:
      if (known && !writing) {
        answer(in.unique, 0);
        return true;
      }
      break;
    case FUSE_GETATTR:
      *has_fh = false;  // served by node id
      return false;
    case FUSE_SETATTR:
      if (!writing) {
        *has_fh = false;  // served by node id
        return false;
      }
      break;
    default:
      break;
  }
  log::error(
      "restart: {} of {} opened {}before the daemon restarted: EIO (what was written "
      "there and not flushed is lost)",
      op == FUSE_WRITE   ? "write"
      : op == FUSE_FSYNC ? "fsync"
      : op == FUSE_FLUSH ? "close"
                         : "request",
      known ? state_.path_of(h.nodeid) : std::string("a file"), writing ? "for writing " : "");
  answer(in.unique, EIO);
  return true;
}

bool Handover::take_request(char* buf, size_t n) {
  auto* in = reinterpret_cast<fuse_in_header*>(buf);
  char* body = buf + sizeof(fuse_in_header);
  const size_t body_len = n - sizeof(fuse_in_header);
  auto str_at = [&](size_t off) -> std::string {
    if (off >= body_len) return {};
    return std::string(body + off, strnlen(body + off, body_len - off));
  };
  std::lock_guard lock(mu_);
  Pending p{in->opcode, in->nodeid};
  switch (in->opcode) {
    case FUSE_LOOKUP:
    case FUSE_SYMLINK:  // name, then the target
      p.name = str_at(0);
      break;
    case FUSE_MKDIR:
      p.name = str_at(sizeof(fuse_mkdir_in));
      break;
    case FUSE_MKNOD:
      p.name = str_at(sizeof(fuse_mknod_in));
      break;
    case FUSE_CREATE: {
      if (body_len < sizeof(fuse_create_in)) break;
      p.flags = reinterpret_cast<fuse_create_in*>(body)->flags;
      p.name = str_at(sizeof(fuse_create_in));
      break;
    }
    case FUSE_OPEN:
    case FUSE_OPENDIR:
      if (body_len >= sizeof(fuse_open_in)) p.flags = reinterpret_cast<fuse_open_in*>(body)->flags;
      break;
    case FUSE_RENAME:
    case FUSE_RENAME2: {
      const size_t arg =
          in->opcode == FUSE_RENAME ? sizeof(fuse_rename_in) : sizeof(fuse_rename2_in);
      if (body_len < arg) break;
      p.new_parent = reinterpret_cast<fuse_rename_in*>(body)->newdir;
      p.name = str_at(arg);
      p.new_name = str_at(arg + p.name.size() + 1);
      break;
    }
    case FUSE_FORGET:
      if (body_len >= sizeof(fuse_forget_in)) {
        const uint64_t n = reinterpret_cast<fuse_forget_in*>(body)->nlookup;
        journal_.append(handover::forget_line(in->nodeid, n));
        state_.forgot(in->nodeid, n);
        maybe_compact();
      }
      return false;
    case FUSE_BATCH_FORGET: {
      if (body_len < sizeof(fuse_batch_forget_in)) return false;
      const uint32_t count = reinterpret_cast<fuse_batch_forget_in*>(body)->count;
      std::string lines;
      for (uint32_t i = 0; i < count; ++i) {
        const size_t off = sizeof(fuse_batch_forget_in) + i * sizeof(fuse_forget_one);
        if (off + sizeof(fuse_forget_one) > body_len) break;
        fuse_forget_one one;
        std::memcpy(&one, body + off, sizeof one);
        lines += handover::forget_line(one.nodeid, one.nlookup);
        state_.forgot(one.nodeid, one.nlookup);
      }
      journal_.append(lines);
      maybe_compact();
      return false;
    }
    default:
      break;
  }
  // Requests that carry a file handle: the token becomes this daemon's handle.
  uint64_t* fh = nullptr;
  bool has_fh = true;
  switch (in->opcode) {
    case FUSE_READ:
    case FUSE_WRITE:
    case FUSE_FLUSH:
    case FUSE_FSYNC:
    case FUSE_RELEASE:
    case FUSE_RELEASEDIR:
    case FUSE_READDIR:
    case FUSE_READDIRPLUS:
    case FUSE_IOCTL:
      if (body_len >= sizeof(uint64_t)) fh = reinterpret_cast<uint64_t*>(body);
      break;
    case FUSE_GETATTR: {
      auto* g = reinterpret_cast<fuse_getattr_in*>(body);
      if (body_len >= sizeof *g && (g->getattr_flags & FUSE_GETATTR_FH)) {
        fh = &g->fh;
        if (!translate_fh(*in, fh, &has_fh) && !has_fh) g->getattr_flags &= ~FUSE_GETATTR_FH;
        fh = nullptr;
      }
      break;
    }
    case FUSE_SETATTR: {
      auto* s = reinterpret_cast<fuse_setattr_in*>(body);
      if (body_len >= sizeof *s && (s->valid & FATTR_FH)) {
        if (translate_fh(*in, &s->fh, &has_fh)) return true;
        if (!has_fh) s->valid &= ~FATTR_FH;
      }
      break;
    }
    default:
      break;
  }
  if (fh != nullptr && translate_fh(*in, fh, &has_fh)) return true;
  switch (in->opcode) {
    case FUSE_LOOKUP:
    case FUSE_SYMLINK:
    case FUSE_MKDIR:
    case FUSE_MKNOD:
    case FUSE_CREATE:
    case FUSE_OPEN:
    case FUSE_OPENDIR:
    case FUSE_RENAME:
    case FUSE_RENAME2:
    case FUSE_READDIRPLUS:
      pending_[in->unique] = std::move(p);
      break;
    default:
      break;
  }
  return false;
}

ssize_t Handover::writev(iovec* iov, int count) {
  if (count < 1 || iov[0].iov_len < sizeof(fuse_out_header)) return ::writev(fd_, iov, count);
  fuse_out_header out;
  std::memcpy(&out, iov[0].iov_base, sizeof out);
  if (out.unique == 0) return ::writev(fd_, iov, count);  // a notification
  Pending p;
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(out.unique);
    if (it == pending_.end()) return ::writev(fd_, iov, count);
    p = std::move(it->second);
    pending_.erase(it);
  }
  if (p.opcode == FUSE_INIT) {
    ssize_t res = static_cast<ssize_t>(out.len);
    if (restarted_) {
      // The kernel has the first daemon's answer; requests the daemon before this one read
      // and did not answer are queued again.
      fuse_out_header resend{};
      resend.len = sizeof resend;
      resend.error = kNotifyResend;
      if (::write(fd_, &resend, sizeof resend) < 0)
        log::warn(
            "restart: FUSE_NOTIFY_RESEND failed ({}): requests in flight at the "
            "restart wait forever",
            std::strerror(errno));
      else
        log::info("restart: serving again; requests in flight at the switch are read again");
    } else {
      res = ::writev(fd_, iov, count);
    }
    std::lock_guard lock(init_mu_);
    init_done_ = true;
    init_cv_.notify_all();
    return res;
  }
  if (out.error != 0) return ::writev(fd_, iov, count);
  // The reply, whole, to read and edit.
  std::vector<char> msg;
  for (int i = 0; i < count; ++i) {
    const char* b = static_cast<const char*>(iov[i].iov_base);
    msg.insert(msg.end(), b, b + iov[i].iov_len);
  }
  char* body = msg.data() + sizeof(fuse_out_header);
  const size_t body_len = msg.size() - sizeof(fuse_out_header);
  bool edited = false;
  {
    std::lock_guard lock(mu_);
    auto entry = [&](const fuse_entry_out& e, uint64_t parent, const std::string& name) {
      if (e.nodeid == 0) return;
      journal_.append(handover::lookup_line(e.nodeid, parent, name));
      state_.looked_up(e.nodeid, parent, name);
    };
    switch (p.opcode) {
      case FUSE_LOOKUP:
      case FUSE_SYMLINK:
      case FUSE_MKDIR:
      case FUSE_MKNOD:
        if (body_len >= sizeof(fuse_entry_out)) {
          fuse_entry_out e;
          std::memcpy(&e, body, sizeof e);
          entry(e, p.nodeid, p.name);
        }
        break;
      case FUSE_CREATE:
        if (body_len >= sizeof(fuse_entry_out) + sizeof(fuse_open_out)) {
          fuse_entry_out e;
          std::memcpy(&e, body, sizeof e);
          entry(e, p.nodeid, p.name);
          auto* o = reinterpret_cast<fuse_open_out*>(body + sizeof e);
          o->fh = new_token(o->fh, e.nodeid, p.flags, false);
          edited = true;
        }
        break;
      case FUSE_OPEN:
      case FUSE_OPENDIR:
        if (body_len >= sizeof(fuse_open_out)) {
          auto* o = reinterpret_cast<fuse_open_out*>(body);
          o->fh = new_token(o->fh, p.nodeid, p.flags, p.opcode == FUSE_OPENDIR);
          edited = true;
        }
        break;
      case FUSE_RENAME:
      case FUSE_RENAME2:
        journal_.append(handover::rename_line(p.nodeid, p.name, p.new_parent, p.new_name));
        state_.renamed(p.nodeid, p.name, p.new_parent, p.new_name);
        break;
      case FUSE_READDIRPLUS:
        for (size_t off = 0; off + FUSE_NAME_OFFSET_DIRENTPLUS <= body_len;) {
          fuse_direntplus d;
          std::memcpy(&d, body + off, sizeof d);
          if (off + FUSE_NAME_OFFSET_DIRENTPLUS + d.dirent.namelen > body_len) break;
          const std::string name(body + off + FUSE_NAME_OFFSET_DIRENTPLUS, d.dirent.namelen);
          if (name != "." && name != "..") entry(d.entry_out, p.nodeid, name);
          off += FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET_DIRENTPLUS + d.dirent.namelen);
        }
        break;
      default:
        break;
    }
    maybe_compact();
  }
  if (!edited) return ::writev(fd_, iov, count);
  const ssize_t n = ::write(fd_, msg.data(), msg.size());
  return n;
}

// The session's userdata: what the callbacks find (a FuseCallbackState), and the handover.
struct HandoverState : FuseCallbackState {
  Handover* handover;
};

Handover& handover_of(void* userdata) {
  return *static_cast<HandoverState*>(static_cast<FuseCallbackState*>(userdata))->handover;
}

}  // namespace

Result<int> mount_session_fd(const FuseOptions& options) {
  SessionArgs args(options);
  fuse_lowlevel_ops ops{};  // nothing is served here: the daemon serves the descriptor
  fuse_session* se = fuse_session_new(args.get(), &ops, sizeof ops, nullptr);
  if (se == nullptr) return Status(Errc::kInternal, "cannot create the FUSE session");
  if (fuse_session_mount(se, options.mountpoint.c_str()) != 0) {
    fuse_session_destroy(se);
    return Status(Errc::kIo, "cannot mount on " + options.mountpoint +
                                 " (is /dev/fuse there, and the mountpoint an empty directory?)");
  }
  // The descriptor outlives the session object (which would unmount and close it).
  const int fd = ::dup(fuse_session_fd(se));
  // Freed without fuse_session_destroy, which would unmount: a small, one-time leak.
  if (fd < 0) return Status(Errc::kIo, std::string("dup: ") + std::strerror(errno));
  raise_read_ahead(options);
  return fd;
}

int run_fuse_on_fd(Filesystem& fs, const FuseOptions& options, int fd, const std::string& state_dir,
                   const std::function<void(const Status&)>& on_ready) {
  Handover handover(fs, fd, state_dir);
  if (Status st = handover.start(); !st.is_ok()) {
    on_ready(st);
    return 1;
  }
  SessionArgs args(options);
  HandoverState state{{fs, options}, &handover};
  handover.set_callbacks(&state);
  fuse_session* se = new_session(args, state);
  if (se == nullptr) {
    on_ready(Status(Errc::kInternal, "cannot create the FUSE session"));
    return 1;
  }
  fuse_custom_io io{};
  io.read = [](int, void* buf, size_t len, void* ud) { return handover_of(ud).read(buf, len); };
  io.writev = [](int, iovec* iov, int count, void* ud) {
    return handover_of(ud).writev(iov, count);
  };
  // fuse_session_destroy closes the descriptor it is given: a copy, the supervisor's stays.
  const int own_fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own_fd < 0 || fuse_session_custom_io(se, &io, own_fd) != 0) {
    if (own_fd >= 0) ::close(own_fd);
    fuse_session_destroy(se);
    on_ready(Status(Errc::kInternal, "cannot serve the inherited FUSE session"));
    return 1;
  }
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_session_destroy(se);
    on_ready(Status(Errc::kInternal, "cannot install signal handlers"));
    return 1;
  }
  // One descriptor for all workers (no clone_fd): requests a daemon read and did not answer
  // stay on this descriptor's queue for the resend, where a cloned descriptor would fail
  // them when its daemon goes.
  const int rc = serve_session(se, state, options, /*clone_fd=*/false, on_ready);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  return rc;
}

}  // namespace warmfs
