// Model test of writes and the namespace: random operations (model_fs.h) run against the
// kernel-free core with faults injected into the object store, checked after every step
// against the reference model and, after every fsync or close that returned 0, against the
// bucket. docs/reliability.md describes it.
//
// What is checked:
//  - each operation's errno is one POSIX and docs/posix.md allow (model_fs.h);
//  - after every step, the mount's tree (listings, lookups, sizes) and the bytes of the files
//    the step touched equal the model's; every 50 steps and at sync points, every file's;
//  - a step during which a fault acted may fail with EIO; the state is then as before or as
//    after the operation, never mixed; a last close that failed may fall back to what the
//    bucket holds (docs/posix.md: warmfs gives up on that data), if that is a version the
//    model knew;
//  - fsync or close that returned 0: the bucket holds the file's bytes;
//  - sync points (and the end): every handle closed, caches expired, the bucket holds exactly
//    the model's files and directory markers, the mount lists them afresh, and no multipart
//    upload is left open.
//
// Reproducing: the seed, the last operations before a failure and a shrunk sequence that
// still fails (paste it into a replay_text() test) are printed. WARMFS_MODEL_SEED=N runs one
// seed, WARMFS_MODEL_OPS=N sets the operations per seed (e.g. `WARMFS_MODEL_SEED=7
// WARMFS_MODEL_OPS=200000 build/tests/warmfs_unit_tests "[model-fs]"`),
// WARMFS_MODEL_FAULT_PERCENT (15) and WARMFS_MODEL_MAX_FAULTS (2) how many steps get faults
// and how many, WARMFS_MODEL_SHRINK_SECONDS (60) the time the shrinking may take, and
// WARMFS_MODEL_LOG_LINES (400) how many operations a failure prints.
#include <fcntl.h>
#include <linux/fs.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

#include "cache/memory_cache.h"
#include "common/errno_map.h"
#include "fs/filesystem.h"
#include "model_fs.h"
#include "support/fake_clock.h"
#include "support/fault_injecting_store.h"
#include "support/memory_object_store.h"
#include "support/temp_dir.h"
#include "upload/staging.h"

namespace warmfs {
namespace {

using model::Kind;
using model::Operation;
using model::Tree;
using FOp = FaultInjectingStore::Op;

constexpr uint64_t kPart = 64 << 10;  // small parts, so files of a few hundred KiB are multipart
constexpr auto kTtl = std::chrono::seconds(60);

std::string str(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// One open file of the driver: the core's handle and the model file it refers to.
struct Handle {
  std::unique_ptr<FileHandle> fh;
  uint64_t serial = 0;  // id of the operation that opened it
  uint64_t file_id = 0;
  int access = O_RDONLY;
  bool append = false;
  bool readable() const { return access != O_WRONLY; }
  bool writable() const { return access != O_RDONLY; }
};

// What a failed rename may have left in the bucket (docs/posix.md: copies first, then
// deletes): the destination paths holding copies of the source's bytes (nullopt: a directory
// marker).
struct Leftover {
  std::string path;
  std::optional<model::Bytes> content;
};

struct Stats {
  uint64_t steps = 0, failed_ops = 0, faulted_steps = 0, injected = 0, bucket_checks = 0, syncs = 0;
  std::map<std::string, uint64_t> by_kind;
};

class Harness {
 public:
  // fault_percent: steps with faults armed; max_faults: faults armed in such a step.
  explicit Harness(uint64_t seed, int fault_percent = 15, int max_faults = 2)
      : seed_(seed),
        gen_(seed, model::Limits{}),
        fault_rng_(seed * 7919 + 1),
        fault_percent_(fault_percent),
        max_faults_(max_faults) {
    bucket_.set_min_part_size(kPart);
    staging_ = StagingArea::open(tmp_.path, store_).value();
    UploaderOptions uo;
    uo.bucket = "b";
    uo.plan = PartPlan(kPart);
    uo.single_put_max = kPart;
    uo.threads = 2;
    uo.chunk_size = 16 << 10;
    uploader_ = std::make_unique<Uploader>(store_, *staging_, &memory_, clock_, uo);
    ReadaheadOptions ro;
    ro.fetch_threads = 2;
    ro.chunk_size = 16 << 10;
    read_path_ = std::make_unique<ReadPath>(store_, memory_, "b", ro);
    MetaOptions mo;
    mo.ttl = kTtl;
    meta_ = std::make_unique<Metadata>(store_, clock_, mo);
    FsOptions fo;
    fo.bucket = "b";
    fo.read_only = false;
    fs_ = std::make_unique<Filesystem>(*meta_, *read_path_, memory_, nullptr, store_, clock_, fo,
                                       uploader_.get());
  }
  ~Harness() {
    store_.clear_faults();
    for (auto& h : handles_) fs_->release(std::move(h.fh));
    handles_.clear();
    fs_.reset();
    uploader_.reset();
    staging_.reset();
  }

  // Runs n random operations; returns "" or what went wrong, with the operations.
  std::string run(uint64_t n) {
    for (uint64_t i = 0; i < n && error_.empty(); ++i) {
      Operation op = gen_.next(tree_, handles_.size());
      op.id = ++next_op_id_;
      if (!handles_.empty()) op.handle = handles_[op.handle % handles_.size()].serial;
      if (op.kind == Kind::kReopen) {
        Handle& h = *find_handle(op.handle);
        auto path = tree_.path_of(h.file_id);
        Operation close_op = op, open_op;
        close_op.kind = Kind::kClose;
        open_op.kind = Kind::kOpen;
        open_op.id = ++next_op_id_;
        open_op.access = h.access;
        open_op.append = h.append;
        open_op.path = path.value_or("gone");
        step(close_op);
        if (path && error_.empty()) step(open_op);
      } else {
        step(op);
      }
    }
    if (error_.empty()) step(Operation{});  // a final sync
    return error_;
  }

  // Runs the given operations with their faults (a regression's minimal sequence).
  std::string replay(const std::vector<Operation>& ops) {
    draw_faults_ = false;
    for (const Operation& op : ops) {
      if (!error_.empty()) break;
      step(op);
    }
    if (error_.empty()) step(Operation{});
    return error_;
  }

  const Stats& stats() const { return stats_; }
  // The operations run so far, as run (handles resolved, faults drawn, reopens split).
  const std::vector<Operation>& operations() const { return ops_; }

 private:
  // ---- the model ---------------------------------------------------------------------------
  struct Expect {
    std::set<int> errnos;  // {0}: success
    Tree after;
  };
  Expect expect(const Operation& op, Handle* h) {
    Expect e{{0}, tree_};
    Tree& t = e.after;
    auto fail = [&](std::set<int> s) {
      e.errnos = std::move(s);
      e.after = tree_;
      return e;
    };
    const std::optional<std::string> hp =
        h != nullptr ? tree_.path_of(h->file_id) : std::optional<std::string>{};
    auto write_at = [&](uint64_t off, const std::string& data) {
      model::File& f = t.file(*hp);
      std::string c = *f.content;
      if (c.size() < off + data.size()) c.resize(off + data.size(), '\0');
      std::memcpy(c.data() + off, data.data(), data.size());
      f.content = model::make_bytes(std::move(c));
    };
    switch (op.kind) {
      case Kind::kCreate:
      case Kind::kOpen: {
        if (int pe = tree_.parent_error(op.path)) return fail({pe});
        if (!tree_.exists(op.path)) {
          if (op.kind == Kind::kOpen) return fail({ENOENT});
          t.nodes[op.path] = model::File{next_id_, model::make_bytes(""), std::nullopt};
          return e;
        }
        if (op.kind == Kind::kCreate && op.excl) return fail({EEXIST});
        if (tree_.is_dir(op.path)) return fail({op.access == O_RDONLY ? 0 : EISDIR});
        if (op.trunc) t.file(op.path).content = model::make_bytes("");
        return e;
      }
      case Kind::kWrite:
      case Kind::kAppend: {
        if (!hp) return e;  // orphan: anything goes
        if (!h->writable()) return fail({EBADF});
        const bool end = op.kind == Kind::kAppend || h->append;
        write_at(end ? t.file(*hp).content->size() : op.offset, model::data_of(op));
        return e;
      }
      case Kind::kRead:
        if (hp && !h->readable()) return fail({EBADF});
        return e;
      case Kind::kFtruncate: {
        if (!hp) return e;
        if (!h->writable()) return fail({EINVAL});
        std::string c = *t.file(*hp).content;
        c.resize(op.length, '\0');
        t.file(*hp).content = model::make_bytes(std::move(c));
        return e;
      }
      case Kind::kTruncate: {
        if (int pe = tree_.parent_error(op.path)) return fail({pe});
        if (!tree_.exists(op.path)) return fail({ENOENT});
        if (tree_.is_dir(op.path)) return fail({EISDIR});
        std::string c = *t.file(op.path).content;
        c.resize(op.length, '\0');
        t.file(op.path).content = model::make_bytes(std::move(c));
        t.file(op.path).durable = t.file(op.path).content;
        return e;
      }
      case Kind::kFsync:  // through any handle: the file's data is durable
        if (hp) t.file(*hp).durable = t.file(*hp).content;
        return e;
      case Kind::kClose:
        if (hp && (h->writable() || h->fh->writable())) t.file(*hp).durable = t.file(*hp).content;
        return e;
      case Kind::kMkdir:
        if (int pe = tree_.parent_error(op.path)) return fail({pe});
        if (tree_.exists(op.path)) return fail({EEXIST});
        t.nodes[op.path] = std::nullopt;
        return e;
      case Kind::kRmdir:
        if (int pe = tree_.parent_error(op.path)) return fail({pe});
        if (!tree_.exists(op.path)) return fail({ENOENT});
        if (!tree_.is_dir(op.path)) return fail({ENOTDIR});
        if (!tree_.children(op.path).empty()) return fail({ENOTEMPTY});
        t.remove(op.path);
        return e;
      case Kind::kUnlink:
        if (int pe = tree_.parent_error(op.path)) return fail({pe});
        if (!tree_.exists(op.path)) return fail({ENOENT});
        if (tree_.is_dir(op.path)) return fail({EISDIR});
        t.remove(op.path);
        return e;
      case Kind::kRename: {
        const std::string &p = op.path, &q = op.path2;
        if (int pe = tree_.parent_error(p)) return fail({pe});
        if (!tree_.exists(p)) return fail({ENOENT});
        if (int pe = tree_.parent_error(q)) return fail({pe});
        if (p == q) return e;
        std::set<int> errs;
        if (tree_.is_dir(p) && model::at_or_below(q, p)) errs.insert(EINVAL);
        if (tree_.exists(q)) {
          if (op.noreplace) errs.insert(EEXIST);
          if (tree_.is_dir(p) && tree_.is_file(q)) errs.insert(ENOTDIR);
          if (tree_.is_file(p) && tree_.is_dir(q)) errs.insert(EISDIR);
          if (tree_.is_dir(q) && !tree_.children(q).empty()) errs.insert(ENOTEMPTY);
        }
        if (!errs.empty()) return fail(errs);
        t.move(p, q);
        // Written bytes reach the bucket before the copy.
        for (auto& [path, node] : t.nodes) {
          if (node && model::at_or_below(path, q)) node->durable = node->content;
        }
        return e;
      }
      case Kind::kReopen:
      case Kind::kSync:
        return e;
    }
    return e;
  }

  // ---- the core, driven as the kernel would ------------------------------------------------
  // Resolves a path to an inode: ENOENT, ENOTDIR where a component is a file, or an error of
  // the lookup.
  int resolve(const std::string& path, uint64_t* ino, bool* is_dir = nullptr) {
    uint64_t cur = kRootIno;
    bool dir = true;
    size_t start = 0;
    while (start < path.size()) {
      if (!dir) return ENOTDIR;
      size_t slash = path.find('/', start);
      if (slash == std::string::npos) slash = path.size();
      auto a = fs_->lookup(cur, path.substr(start, slash - start));
      if (!a.is_ok()) return to_errno(a.status());
      cur = a->ino;
      dir = a->is_dir;
      start = slash + 1;
    }
    *ino = cur;
    if (is_dir != nullptr) *is_dir = dir;
    return 0;
  }
  int resolve_parent(const std::string& path, uint64_t* ino) {
    bool dir = true;
    if (int e = resolve(model::parent_of(path), ino, &dir)) return e;
    return dir ? 0 : ENOTDIR;
  }
  static std::string base(const std::string& p) {
    auto i = p.rfind('/');
    return i == std::string::npos ? p : p.substr(i + 1);
  }

  int open_flags(const Operation& op) const {
    int flags = op.access;
    if (op.kind == Kind::kCreate) flags |= O_CREAT | (op.excl ? O_EXCL : 0);
    if (op.trunc) flags |= O_TRUNC;
    if (op.append) flags |= O_APPEND;
    return flags;
  }

  // Runs op; returns its errno. read_out: the bytes a read returned.
  int execute(const Operation& op, Handle* h, std::string* read_out) {
    switch (op.kind) {
      case Kind::kCreate:
      case Kind::kOpen: {
        uint64_t parent = 0;
        if (int e = resolve_parent(op.path, &parent)) return e;
        auto found = fs_->lookup(parent, base(op.path));
        std::unique_ptr<FileHandle> fh;
        if (found.is_ok()) {
          if (op.kind == Kind::kCreate && op.excl) return EEXIST;  // the kernel's check
          if (found->is_dir) {
            if (op.access != O_RDONLY) return EISDIR;
            auto l = fs_->opendir(found->ino);  // open(O_RDONLY) of a directory
            return l.is_ok() ? 0 : to_errno(l.status());
          }
          auto o = fs_->open(found->ino, open_flags(op));
          if (!o.is_ok()) return to_errno(o.status());
          fh = std::move(o->handle);
        } else if (found.code() == Errc::kNotFound && op.kind == Kind::kCreate) {
          auto c = fs_->create(parent, base(op.path), open_flags(op));
          if (!c.is_ok()) return to_errno(c.status());
          fh = std::move(c->open.handle);
        } else {
          return to_errno(found.status());
        }
        // The model names the file: new or existing, it is at op.path now.
        pending_handle_ = Handle{};
        pending_handle_.fh = std::move(fh);
        pending_handle_.access = op.access;
        pending_handle_.append = op.append;
        return 0;
      }
      case Kind::kWrite:
      case Kind::kAppend: {
        if (!h->writable()) return EBADF;
        uint64_t off = op.offset;
        if (op.kind == Kind::kAppend || h->append) {
          auto a = fs_->getattr(h->fh->ino());  // the kernel writes O_APPEND at its i_size
          if (!a.is_ok()) return to_errno(a.status());
          off = a->size;
        }
        const std::string data = model::data_of(op);
        auto r = fs_->write(*h->fh, off, std::as_bytes(std::span(data)));
        if (!r.is_ok()) return to_errno(r.status());
        return *r == data.size() ? 0 : EIO;
      }
      case Kind::kRead: {
        if (!h->readable()) return EBADF;
        std::vector<std::byte> buf(op.length);
        auto r = fs_->read(*h->fh, op.offset, buf);
        if (!r.is_ok()) return to_errno(r.status());
        buf.resize(*r);
        *read_out = str(buf);
        return 0;
      }
      case Kind::kFtruncate: {
        if (!h->writable()) return EINVAL;
        SetAttrRequest req;
        req.size = op.length;
        auto r = fs_->setattr(h->fh->ino(), req, h->fh.get());
        return r.is_ok() ? 0 : to_errno(r.status());
      }
      case Kind::kTruncate: {
        uint64_t ino = 0;
        if (int e = resolve(op.path, &ino)) return e;
        SetAttrRequest req;
        req.size = op.length;
        auto r = fs_->setattr(ino, req, nullptr);
        return r.is_ok() ? 0 : to_errno(r.status());
      }
      case Kind::kFsync: {
        Status st = fs_->fsync(*h->fh);
        if (!st.is_ok()) last_flush_error_ = st.to_string();
        return to_errno(st);
      }
      case Kind::kClose: {
        // close(): FUSE's flush (for handles the core opened for writing, as the adapter's
        // op_flush), then release, whatever flush said.
        const int e = h->fh->writable() ? flush_errno(*h->fh) : 0;
        fs_->release(std::move(h->fh));
        return e;
      }
      case Kind::kMkdir: {
        uint64_t parent = 0;
        if (int e = resolve_parent(op.path, &parent)) return e;
        auto r = fs_->mkdir(parent, base(op.path));
        return r.is_ok() ? 0 : to_errno(r.status());
      }
      case Kind::kRmdir:
      case Kind::kUnlink: {
        uint64_t parent = 0;
        if (int e = resolve_parent(op.path, &parent)) return e;
        Status st = op.kind == Kind::kRmdir ? fs_->rmdir(parent, base(op.path))
                                            : fs_->unlink(parent, base(op.path));
        return to_errno(st);
      }
      case Kind::kRename: {
        uint64_t p = 0, q = 0;
        if (int e = resolve_parent(op.path, &p)) return e;
        if (auto a = fs_->lookup(p, base(op.path)); !a.is_ok()) return to_errno(a.status());
        if (int e = resolve_parent(op.path2, &q)) return e;
        return to_errno(
            fs_->rename(p, base(op.path), q, base(op.path2), op.noreplace ? RENAME_NOREPLACE : 0));
      }
      case Kind::kReopen:
      case Kind::kSync:
        return 0;
    }
    return 0;
  }

  // ---- observing the mount -------------------------------------------------------------------
  struct Seen {
    bool is_dir = false;
    uint64_t size = 0;
  };
  // The mount's tree as listings and lookups show it.
  std::string walk(const std::string& dir, uint64_t ino, std::map<std::string, Seen>& out) {
    auto l = fs_->opendir(ino);
    if (!l.is_ok()) return "opendir(" + dir + "): " + l.status().to_string();
    auto entries = (*l)->read_all();
    if (!entries.is_ok()) return "readdir(" + dir + "): " + entries.status().to_string();
    for (const DirEntry& e : *entries) {
      const std::string p = model::join(dir, e.name.str());
      auto a = fs_->lookup(ino, e.name);
      if (!a.is_ok()) return "lookup(" + p + ") of a listed name: " + a.status().to_string();
      if (a->is_dir != e.is_dir) return p + ": listed and looked up as different types";
      out[p] = Seen{a->is_dir, a->size};
      if (a->is_dir) {
        auto err = walk(p, a->ino, out);
        if (!err.empty()) return err;
      }
    }
    return "";
  }
  // Bytes of a file through a new read-only handle.
  Result<std::string> contents(const std::string& path) {
    uint64_t ino = 0;
    if (int e = resolve(path, &ino)) return Status(Errc::kIo, "resolve: " + std::to_string(e));
    auto o = fs_->open(ino, O_RDONLY);
    if (!o.is_ok()) return o.status();
    auto a = fs_->getattr(ino);
    std::vector<std::byte> buf((a.is_ok() ? a->size : 0) + 4096);
    auto r = fs_->read(*o->handle, 0, buf);
    fs_->release(std::move(o->handle));
    if (!r.is_ok()) return r.status();
    buf.resize(*r);
    return str(buf);
  }

  // Adopts leftovers of failed renames that the mount or the bucket shows, into t.
  void adopt(Tree& t, const std::map<std::string, Seen>& seen) {
    for (const Leftover& l : leftovers_) {
      auto it = seen.find(l.path);
      if (it == seen.end()) continue;
      const bool differs = !t.exists(l.path) || t.is_dir(l.path) != !l.content ||
                           (l.content && *t.file(l.path).content != **l.content);
      if (!differs) continue;
      if (!l.content) {
        if (!t.exists(l.path)) t.nodes[l.path] = std::nullopt;
        continue;
      }
      if (it->second.is_dir || it->second.size != (*l.content)->size()) continue;
      auto bytes = contents(l.path);
      if (!bytes.is_ok() || *bytes != **l.content) continue;
      // A file the copy replaced is gone, as if the rename had replaced it: its handles are
      // of a deleted file.
      t.nodes[l.path] = model::File{next_id_++, *l.content, *l.content};
    }
  }

  // "" if the mount shows t (the bytes of `touched` files, or all with all_bytes).
  std::string compare(Tree& t, const std::set<std::string>& touched, bool all_bytes) {
    std::map<std::string, Seen> seen;
    auto err = walk("", kRootIno, seen);
    if (!err.empty()) return err;
    adopt(t, seen);
    for (const auto& [p, s] : seen) {
      if (!t.exists(p)) return "the mount shows " + p + ", the model has no such path";
      if (t.is_dir(p) != s.is_dir) return p + ": the mount and the model disagree on its type";
      if (!s.is_dir && s.size != t.file(p).content->size()) {
        return p + ": size " + std::to_string(s.size) + ", the model says " +
               std::to_string(t.file(p).content->size());
      }
    }
    for (const auto& [p, n] : t.nodes) {
      if (!seen.count(p)) return "the model has " + p + ", the mount does not show it";
      if (n && (all_bytes || touched.count(p))) {
        auto b = contents(p);
        if (!b.is_ok()) return "reading " + p + ": " + b.status().to_string();
        if (*b != *n->content) {
          size_t at = 0;
          while (at < b->size() && at < n->content->size() && (*b)[at] == (*n->content)[at]) ++at;
          return p + ": the mount's bytes differ from the model's (" + std::to_string(b->size()) +
                 " and " + std::to_string(n->content->size()) + " bytes, first difference at " +
                 std::to_string(at) + ")";
        }
      }
    }
    return "";
  }

  std::string check_bucket(const Tree& t) {
    std::map<std::string, std::string> want;
    for (const auto& [p, n] : t.nodes) want[n ? p : p + "/"] = n ? *n->content : "";
    ListRequest req{"", "", "", 1000};
    std::map<std::string, std::string> have;
    while (true) {
      auto page = bucket_.list(req);
      if (!page.is_ok()) return "listing the bucket: " + page.status().to_string();
      for (auto& o : page->objects) have[o.key] = str(*bucket_.object_bytes(o.key));
      if (!page->truncated) break;
      req.continuation_token = page->next_token;
    }
    for (const auto& [k, v] : want) {
      auto it = have.find(k);
      if (it == have.end()) return "the bucket has no " + k;
      if (it->second != v) return "the bucket's " + k + " differs from the model";
    }
    for (const auto& [k, v] : have) {
      if (!want.count(k)) return "the bucket has " + k + ", the model does not";
    }
    if (bucket_.upload_count() != 0) return "a multipart upload is left open";
    return "";
  }

  // ---- one step ------------------------------------------------------------------------------
  // Store operations a fault may hit (not aborts: a failed abort leaves an upload open, which
  // the next mount's journal cleanup handles, outside this test), and the failures.
  static constexpr FOp kFaultOps[] = {
      FOp::kHead,       FOp::kGetRange,          FOp::kList, FOp::kPut,    FOp::kCreateMultipart,
      FOp::kUploadPart, FOp::kCompleteMultipart, FOp::kCopy, FOp::kRemove, FOp::kRemoveMany};
  static Status fault_status(int i) {
    switch (i % 3) {
      case 0:
        return Status(Errc::kIo, "injected: 500 InternalError");
      case 1:
        return Status(Errc::kUnavailable, "injected: 503 SlowDown");
      default:
        return Status(Errc::kTimeout, "injected: connection reset");
    }
  }
  // Faults for one step, drawn from the harness's own generator.
  std::vector<model::Fault> draw_faults() {
    std::vector<model::Fault> out;
    if (fault_percent_ == 0 || fault_rng_() % 100 >= uint64_t(fault_percent_)) return out;
    const int n = 1 + int(fault_rng_() % uint64_t(max_faults_));
    for (int i = 0; i < n; ++i) {
      model::Fault f;
      f.op = int(fault_rng_() % std::size(kFaultOps));
      switch (fault_rng_() % 10) {
        case 0:
        case 1:
          f.kind = 1;
          f.value = uint32_t(50 + fault_rng_() % 1500);
          break;
        case 2:
        case 3:
          f.kind = 2;
          f.n = 1 + int(fault_rng_() % 2);
          f.value = uint32_t(fault_rng_() % 3000);
          break;
        default:
          f.kind = 0;
          f.n = 1 + int(fault_rng_() % 2);
          f.status = int(fault_rng_() % 3);
      }
      out.push_back(f);
    }
    return out;
  }
  void arm(const std::vector<model::Fault>& faults) {
    for (const model::Fault& f : faults) {
      const FOp op = kFaultOps[size_t(f.op) % std::size(kFaultOps)];
      if (f.kind == 0) store_.fail_next(op, f.n, fault_status(f.status));
      if (f.kind == 1) store_.set_delay(op, std::chrono::microseconds(f.value));
      if (f.kind == 2) store_.truncate_next(f.n, f.value);
    }
  }

  int flush_errno(FileHandle& fh) {
    Status st = fs_->flush(fh);
    if (!st.is_ok()) last_flush_error_ = st.to_string();
    return to_errno(st);
  }

  void sync_all() {
    for (auto& h : handles_) {
      const int e = h.fh->writable() ? to_errno(fs_->flush(*h.fh)) : 0;
      fs_->release(std::move(h.fh));
      if (e != 0 && tree_.path_of(h.file_id)) {
        error_ = "close at a sync point failed with errno " + std::to_string(e);
        return;
      }
      if (auto p = tree_.path_of(h.file_id); p && h.writable())
        tree_.file(*p).durable = tree_.file(*p).content;
    }
    handles_.clear();
    // A file whose last upload failed (its close said so) and whose last handle was a
    // read-only one: that release gave up on the data (docs/posix.md), so the file is what
    // the bucket holds, if that is a version the model knew.
    for (auto it = tree_.nodes.begin(); it != tree_.nodes.end();) {
      auto& [p, n] = *it;
      if (!n || *n->content == *n->durable.value_or(model::make_bytes("\x01"))) {
        ++it;
        continue;
      }
      auto b = bucket_.object_bytes(p);
      if (b && str(*b) == *n->content) {
        n->durable = n->content;
      } else if (b && n->durable && str(*b) == **n->durable) {
        n->content = *n->durable;
      } else if (b && !n->durable) {
        // No durable version known (a new file's first upload at the release of a read-only
        // handle, which the model does not follow): the file is what the bucket holds.
        n->content = model::make_bytes(str(*b));
        n->durable = n->content;
      } else if (!b && !n->durable) {
        it = tree_.nodes.erase(it);
        continue;
      }
      ++it;
    }
    clock_.advance(kTtl + std::chrono::seconds(31));  // listings, attributes, kept copies expire
  }

  void step(Operation op) {
    ++stats_.steps;
    ++stats_.by_kind[model::kind_name(op.kind)];
    const bool on_handle = op.kind == Kind::kWrite || op.kind == Kind::kAppend ||
                           op.kind == Kind::kRead || op.kind == Kind::kFtruncate ||
                           op.kind == Kind::kFsync || op.kind == Kind::kClose;
    if (on_handle && find_handle(op.handle) == nullptr) return;  // not open (a shrunk replay)
    if (draw_faults_ && op.kind != Kind::kSync) op.faults = draw_faults();
    ops_.push_back(op);
    log_.push_back(op.describe());
    if (on_handle) {
      const Handle& hh = *find_handle(op.handle);
      log_.back() += "  # " + tree_.path_of(hh.file_id).value_or("(deleted)") + " " +
                     (hh.access == O_RDONLY   ? "r"
                      : hh.access == O_WRONLY ? "w"
                                              : "rw") +
                     (hh.append ? " append" : "");
    }
    auto failed = [&](const std::string& why) {
      std::ostringstream s;
      s << "model test failed: seed " << seed_ << ", step " << log_.size() << " (" << op.describe()
        << "): " << why << "\noperations (most recent last):\n";
      const size_t keep = std::getenv("WARMFS_MODEL_LOG_LINES")
                              ? std::strtoull(std::getenv("WARMFS_MODEL_LOG_LINES"), nullptr, 10)
                              : 400;
      const size_t from = log_.size() > keep ? log_.size() - keep : 0;
      for (size_t i = from; i < log_.size(); ++i) s << "  " << i + 1 << ": " << log_[i] << "\n";
      error_ = s.str();
    };
    if (op.kind == Kind::kSync) {
      store_.clear_faults();
      sync_all();
      if (!error_.empty()) return failed(error_);
      ++stats_.syncs;
      auto err = compare(tree_, {}, true);
      if (err.empty()) err = check_bucket(tree_);
      if (!err.empty()) return failed(err);
      leftovers_.clear();
      return;
    }
    Handle* h = on_handle ? find_handle(op.handle) : nullptr;
    const size_t hi = on_handle ? size_t(h - handles_.data()) : 0;
    const std::optional<std::string> hpath =
        h != nullptr ? tree_.path_of(h->file_id) : std::optional<std::string>{};
    Expect ex = expect(op, h);
    ++next_id_;
    // Bytes the bucket has at the paths a failure may leave behind, before the step.
    const uint64_t injected_before = store_.injected_count();
    arm(op.faults);
    const bool closed_writable = h != nullptr && (h->writable() || h->fh->writable());
    const uint64_t step_file = h != nullptr ? h->file_id : 0;
    std::string read_bytes;
    const int err = execute(op, h, &read_bytes);
    store_.clear_faults();
    const bool faulted_here = store_.injected_count() != injected_before;
    // Parts of files being written upload in the background: a fault armed for this step may
    // act on another open file's upload, whose failure the core reports at that file's next
    // fsync or close (docs/posix.md). Such a file's later steps may fail as if faulted.
    const bool faulted =
        faulted_here || (step_file != 0 && background_faulted_.count(step_file) != 0);
    if (faulted_here) {
      for (const Handle& o : handles_) {
        if (o.writable()) background_faulted_.insert(o.file_id);
      }
    }
    if (step_file != 0 && err == 0 && (op.kind == Kind::kClose || op.kind == Kind::kFsync)) {
      background_faulted_.erase(step_file);
    }
    stats_.injected = store_.injected_count();
    if (faulted) ++stats_.faulted_steps;
    if (err != 0) ++stats_.failed_ops;

    // The handle list follows the step.
    Handle opened = std::move(pending_handle_);
    pending_handle_ = Handle{};
    const uint64_t closed_id = h != nullptr ? h->file_id : 0;
    if (op.kind == Kind::kClose) {
      handles_.erase(handles_.begin() + long(hi));
      h = nullptr;
    }
    const bool orphan = on_handle && !hpath;
    if (orphan) return;  // a handle of a deleted file: any answer is allowed, the tree is as is
    if (opened.fh) {
      if (err != 0 || !ex.after.is_file(op.path)) {
        fs_->release(std::move(opened.fh));
        return failed("open returned a handle with errno " + std::to_string(err));
      }
      opened.file_id = ex.after.file(op.path).id;
      opened.serial = op.id;
      handles_.push_back(std::move(opened));
    }

    // Which states may the mount be in now?
    std::vector<Tree> candidates;
    auto reverted_to_bucket = [&](const std::string& path) {
      Tree reverted = tree_;
      auto b = bucket_.object_bytes(path);
      model::File& f = reverted.file(path);
      if (!b) {
        if (!f.durable) reverted.remove(path);
      } else if (!f.durable || str(*b) == **f.durable || str(*b) == *f.content) {
        // (No durable version known: a new file's first upload at the release of a
        // read-only handle, which the model does not follow.)
        f.content = model::make_bytes(str(*b));
        f.durable = f.content;
      }
      return reverted;
    };
    bool others_open = false;
    for (const Handle& o : handles_) others_open = others_open || o.file_id == closed_id;
    if (ex.errnos.count(err)) {
      candidates.push_back(ex.after);
      // The release of a last, read-only handle gives up, silently, on data whose upload an
      // earlier close reported failed (docs/posix.md).
      if (op.kind == Kind::kClose && err == 0 && !closed_writable && hpath && !others_open &&
          tree_.file(*hpath).content != tree_.file(*hpath).durable.value_or(nullptr))
        candidates.push_back(reverted_to_bucket(*hpath));
    } else if (faulted && err == EIO && op.kind == Kind::kClose && hpath) {
      // A last close that failed gives up on the data (docs/posix.md): the file is at once
      // what the bucket holds, if that is a version the model knew. With another handle open
      // the data stays, unless that handle is read-only (it cannot write or close with data).
      bool writers = false, readers = false;
      for (const Handle& o : handles_) {
        if (o.file_id != closed_id) continue;
        (o.writable() ? writers : readers) = true;
      }
      if (writers || readers) {
        // The data stays, and is no more durable than before the close.
        Tree kept = ex.after;
        kept.file(*hpath).durable = tree_.file(*hpath).durable;
        candidates.push_back(std::move(kept));
      }
      if (!writers) candidates.push_back(reverted_to_bucket(*hpath));
    } else if (faulted && err == EIO) {
      // (A failed fsync changes nothing: its "after" would count the data durable.)
      if (op.kind == Kind::kTruncate && ex.after.is_file(op.path)) {
        // A failed truncate an open handle shares stays, no more durable than before.
        Tree kept = ex.after;
        kept.file(op.path).durable = tree_.file(op.path).durable;
        candidates.push_back(std::move(kept));
      } else if (op.kind != Kind::kFsync) {
        candidates.push_back(ex.after);
      }
      candidates.push_back(tree_);
      if (op.kind == Kind::kRename) record_leftovers(op);
    } else {
      std::string want;
      for (int e : ex.errnos) want += (want.empty() ? "" : " or ") + std::to_string(e);
      const bool flushed = op.kind == Kind::kClose || op.kind == Kind::kFsync;
      return failed("errno " + std::to_string(err) + " (" + std::strerror(err) + "), expected " +
                    want + (faulted ? " (a fault acted)" : "") +
                    (flushed && err != 0 ? "; the flush said: " + last_flush_error_ : ""));
    }
    if (op.kind == Kind::kRead && err == 0) {
      const std::string& c = *ex.after.file(*hpath).content;
      const std::string want = op.offset >= c.size() ? "" : c.substr(op.offset, op.length);
      if (read_bytes != want) {
        return failed("read returned " + std::to_string(read_bytes.size()) +
                      " bytes that differ from the model's " + std::to_string(want.size()));
      }
    }

    if (op.kind == Kind::kRename && err == 0) {
      // What a failed rename left below a directory moves with it.
      for (Leftover& l : leftovers_) {
        if (model::at_or_below(l.path, op.path)) l.path = op.path2 + l.path.substr(op.path.size());
      }
    }
    std::set<std::string> touched{op.path, op.path2};
    if (hpath) touched.insert(*hpath);
    const bool all = stats_.steps % 50 == 0;
    std::string first_err;
    bool matched = false;
    for (Tree& c : candidates) {
      auto e = compare(c, touched, all);
      if (e.empty()) {
        tree_ = std::move(c);
        matched = true;
        break;
      }
      if (first_err.empty()) first_err = e;
    }
    if (!matched) return failed(first_err);

    // fsync or close that returned 0: the bucket holds the bytes.
    if ((op.kind == Kind::kFsync || (op.kind == Kind::kClose && closed_writable)) && err == 0) {
      ++stats_.bucket_checks;
      auto p = tree_.path_of(closed_id);
      if (p) {
        auto b = bucket_.object_bytes(*p);
        if (!b) return failed("fsync returned 0 and the bucket has no " + *p);
        if (str(*b) != *tree_.file(*p).content)
          return failed("fsync returned 0 and the bucket's " + *p + " differs from the file");
      }
    }
  }

  Handle* find_handle(uint64_t serial) {
    for (Handle& h : handles_)
      if (h.serial == serial) return &h;
    return nullptr;
  }

  void record_leftovers(const Operation& op) {
    for (const auto& [p, n] : tree_.nodes) {
      if (!model::at_or_below(p, op.path)) continue;
      const std::string q = op.path2 + p.substr(op.path.size());
      leftovers_.push_back(Leftover{q, n ? std::optional(n->content) : std::nullopt});
    }
  }

  const uint64_t seed_;
  model::Generator gen_;
  std::mt19937_64 fault_rng_;
  const int fault_percent_;
  const int max_faults_;
  bool draw_faults_ = true;

  FakeClock clock_;
  MemoryObjectStore bucket_{"b", clock_};
  FaultInjectingStore store_{bucket_};
  MemoryCache memory_{MemoryCacheOptions{8 << 20, 4}};
  testing::TempDir tmp_{"warmfs-model-test"};
  // Files open for writing when a fault acted (see run_step): their background uploads may
  // have met it.
  std::set<uint64_t> background_faulted_;
  std::unique_ptr<StagingArea> staging_;
  std::unique_ptr<Uploader> uploader_;
  std::unique_ptr<ReadPath> read_path_;
  std::unique_ptr<Metadata> meta_;
  std::unique_ptr<Filesystem> fs_;

  Tree tree_;
  uint64_t next_id_ = 1;
  uint64_t next_op_id_ = 0;
  std::vector<Handle> handles_;
  Handle pending_handle_;
  std::vector<Leftover> leftovers_;
  std::vector<std::string> log_;
  std::vector<Operation> ops_;
  std::string error_;
  std::string last_flush_error_;  // what the last flush that failed said, for failure reports
  Stats stats_;
};

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

int fault_percent() { return int(env_or("WARMFS_MODEL_FAULT_PERCENT", 15)); }
int max_faults() { return int(env_or("WARMFS_MODEL_MAX_FAULTS", 2)); }

std::string replay(uint64_t seed, const std::vector<Operation>& ops) {
  Harness h(seed);
  return h.replay(ops);
}

// Removes operations while the sequence still fails (delta debugging, chunks halving), within
// a time budget; a regression test keeps what is left.
std::vector<Operation> shrink(uint64_t seed, std::vector<Operation> ops, double budget_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(budget_s);
  for (size_t chunk = ops.size() / 2; chunk >= 1; chunk /= 2) {
    for (size_t i = 0; i + chunk <= ops.size();) {
      if (std::chrono::steady_clock::now() > deadline) return ops;
      std::vector<Operation> fewer(ops.begin(), ops.begin() + long(i));
      fewer.insert(fewer.end(), ops.begin() + long(i + chunk), ops.end());
      if (!replay(seed, fewer).empty()) {
        ops = std::move(fewer);
      } else {
        i += chunk;
      }
    }
  }
  // Faults that the failure does not need go too.
  for (Operation& op : ops) {
    if (op.faults.empty() || std::chrono::steady_clock::now() > deadline) continue;
    auto faults = std::move(op.faults);
    op.faults.clear();
    if (replay(seed, ops).empty()) op.faults = std::move(faults);
  }
  return ops;
}

// Replays a regression's operations (as describe() prints them); "" when they pass.
std::string replay_text(std::initializer_list<const char*> lines) {
  std::vector<Operation> ops;
  for (const char* l : lines) ops.push_back(model::parse_operation(l));
  return replay(0, ops);
}

}  // namespace

// WARMFS_MODEL_SEED and WARMFS_MODEL_OPS run longer sequences by hand (docs/reliability.md);
// the findings it made are the "model test finding" cases below.
TEST_CASE("model test: random writes and namespace changes with faults match the model",
          "[fs][model-fs][model-fs-random]") {
  // 10,000 operations by default: five seeds of 2,000. WARMFS_MODEL_SEED picks one seed,
  // WARMFS_MODEL_OPS the operations per seed.
  std::vector<uint64_t> seeds{1, 2, 3, 4, 5};
  if (const char* s = std::getenv("WARMFS_MODEL_SEED"); s != nullptr && *s != '\0')
    seeds = {std::strtoull(s, nullptr, 10)};
  const uint64_t ops = env_or("WARMFS_MODEL_OPS", 2000);
  for (uint64_t seed : seeds) {
    std::string err;
    std::vector<Operation> run;
    {
      Harness h(seed, fault_percent(), max_faults());
      const auto start = std::chrono::steady_clock::now();
      err = h.run(ops);
      const auto& s = h.stats();
      std::fprintf(stderr,
                   "model test: seed %llu, %llu steps, %llu failed with an errno, %llu faults "
                   "injected over %llu steps, %llu bucket checks, %llu syncs, %.1f s\n",
                   (unsigned long long)seed, (unsigned long long)s.steps,
                   (unsigned long long)s.failed_ops, (unsigned long long)s.injected,
                   (unsigned long long)s.faulted_steps, (unsigned long long)s.bucket_checks,
                   (unsigned long long)s.syncs,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (!err.empty()) run = h.operations();
    }
    if (!err.empty()) {
      // Said at once: shrinking a long run takes as long as the run, each try.
      std::fprintf(stderr, "%s\n", err.c_str());
      const double shrink_seconds = double(env_or("WARMFS_MODEL_SHRINK_SECONDS", 60));
      if (shrink_seconds <= 0) FAIL(err << "\n(not shrunk: WARMFS_MODEL_SHRINK_SECONDS=0)");
      // The shortest sequence that still fails, for a regression test (replay_text).
      auto small = shrink(seed, run, shrink_seconds);
      std::string text;
      for (const Operation& op : small) text += "      \"" + op.describe() + "\",\n";
      FAIL(err << "\nshrunk to " << small.size() << " operations:\n"
               << text << "which fail with: " << replay(seed, small));
    }
  }
}

}  // namespace warmfs

namespace warmfs {

// Sequences the model test found, shrunk, each with the fix it checks. Fault indices are the
// harness's kFaultOps: 3 put, 4 create multipart, 5 upload part, 6 complete, 8 remove.

TEST_CASE(
    "model test finding: a last close whose upload failed leaves the file as the bucket has it",
    "[fs][model-fs]") {
  // Before: the mount went on showing the 100,000 bytes it had given up on, until the staged
  // copy was swept, and a new file stayed listed though the bucket never had it.
  CHECK(replay_text({
            "create id=1 path=d access=w",
            "write id=2 h=1 off=0 len=100000 data=7",
            "close id=3 h=1 fault=fail:6:2:0",
        }) == "");
  CHECK(replay_text({
            "create id=1 path=d access=w",
            "close id=2 h=1",
            "open id=3 path=d access=w",
            "write id=4 h=3 off=132099 len=40100 data=79663368",
            "close id=5 h=3 fault=fail:6:2:0",
        }) == "");
}

TEST_CASE("model test finding: a failed truncate of a path changes nothing", "[fs][model-fs]") {
  // Before: the mount showed the new size, the bucket the old one, and nothing would upload it.
  CHECK(replay_text({
            "create id=1 path=b access=rw",
            "close id=2 h=1",
            "truncate id=3 path=b size=129062 fault=fail:5:2:0",
        }) == "");
}

TEST_CASE("model test finding: a handle opened before another one wrote reads the new bytes",
          "[fs][model-fs]") {
  // Before: the read-only handle read the version it had opened (docs/posix.md: reads through
  // the same mount see the bytes at once).
  CHECK(replay_text({
            "create id=1 path=a access=w",
            "write id=2 h=1 off=0 len=6313 data=3",
            "close id=3 h=1",
            "sync id=4",
            "open id=5 path=a access=r",
            "truncate id=6 path=a size=130643",
            "read id=7 h=5 off=834 len=80137",
            "open id=8 path=a access=rw",
            "write id=9 h=8 off=100 len=5000 data=4",
            "read id=10 h=5 off=0 len=9000",
        }) == "");
}

TEST_CASE("model test finding: renaming a directory keeps a file replaced inside it out of the way",
          "[fs][model-fs]") {
  // Before: the replaced file's node (still held by an open handle) moved with the directory
  // and took the path back, so the mount showed its size and bytes at the new name.
  CHECK(replay_text({
            "mkdir id=1 path=d",
            "mkdir id=2 path=ckpt",
            "mkdir id=3 path=d/x",
            "create id=4 path=ckpt/ckpt access=w trunc",
            "write id=5 h=4 off=592 len=39941 data=3076696571",
            "create id=6 path=d/x/c access=r",
            "rename id=7 from=d/x/c to=ckpt/ckpt",
            "rename id=8 from=ckpt to=d/b noreplace",
        }) == "");
}

TEST_CASE("model test finding: a clean staged copy past its time no longer gives the file's size",
          "[fs][model-fs]") {
  // A failed rename replaced the object under the open file (copy done, delete failed). Before:
  // after the TTL, lookups gave the staged copy's size and reads the bucket's bytes.
  CHECK(replay_text({
            "create id=32 path=c access=w excl trunc",
            "mkdir id=36 path=b",
            "create id=88 path=b/y access=w",
            "rename id=146 from=b/y to=a",
            "open id=158 path=a access=rw trunc",
            "write id=179 h=158 off=310 len=36722 data=3555515037",
            "create id=189 path=a access=rw append",
            "close id=196 h=189",
            "rename id=521 from=c to=a fault=slow:8:1263 fault=fail:8:2:0",
        }) == "");
}

TEST_CASE("model test finding: a failed unlink keeps the open file's writes", "[fs][model-fs]") {
  // Before: unlink discarded the staged copy before deleting; when the delete failed the file
  // stayed, and its close returned 0 without uploading anything.
  CHECK(replay_text({
            "create id=1 path=a access=r",
            "unlink id=2 path=a fault=fail:8:2:0",
        }) == "");
  CHECK(replay_text({
            "create id=1 path=a access=w",
            "write id=2 h=1 off=0 len=5000 data=9",
            "unlink id=3 path=a fault=fail:8:1:0",
            "write id=4 h=1 off=5000 len=100 data=10",
            "fsync id=5 h=1",
        }) == "");
}

TEST_CASE("model test finding: a failed rename onto a file not uploaded yet takes its copy back",
          "[fs][model-fs]") {
  // The destination was created here and still open (its close creates the object). The copy
  // landed, the delete of the source failed. Before: the new file's staged copy was discarded
  // as if the bucket's object had replaced it, so its close returned 0 and the bucket kept the
  // source's bytes under its name.
  CHECK(replay_text({
            "mkdir id=1 path=d",
            "create id=2 path=d/f access=rw",
            "write id=3 h=2 off=3975 len=36666 data=1453714371",
            "mkdir id=4 path=y",
            "create id=5 path=y/b access=r",
            "rename id=6 from=d/f to=y/b fault=fail:8:1:1 fault=slow:3:1491",
            "close id=7 h=5",
        }) == "");
}

TEST_CASE("model test finding: a new file whose close failed leaves with its last reader",
          "[fs][model-fs]") {
  // The writer's close failed with a reader still open: the data stays while the reader
  // holds it, and the reader's release gives up on it; the file was never in the bucket, so
  // it leaves the namespace (docs/posix.md). Before, the model counted the failed close as
  // making the data durable and expected the file to stay.
  CHECK(replay_text({
            "mkdir id=1 path=d",
            "create id=2 path=d/x access=rw",
            "open id=3 path=d/x access=r",
            "write id=4 h=2 off=51483 len=33464 data=576830083",
            "close id=5 h=2 fault=fail:6:1:0",
        }) == "");
}

TEST_CASE("model test finding: a directory rename that failed leaves what the bucket has in view",
          "[fs][model-fs]") {
  // The copies under the new name landed, the delete of the old keys failed, and so did the
  // delete of the copies. Before, the copies stayed in the bucket unseen by the mount, which
  // then created a file at that name: the bucket held a file and a directory of one name.
  // Now the mount lists the directory again and shows the copies.
  CHECK(replay_text({
            "mkdir id=1 path=a",
            "mkdir id=2 path=a/c",
            "mkdir id=3 path=b",
            "rename id=4 from=a/c to=b/d noreplace fault=fail:9:2:0",
            "create id=5 path=b/d access=rw",
        }) == "");  // The delete of the copies succeeds: the failed rename changes nothing.
  CHECK(replay_text({
            "mkdir id=1 path=a",
            "mkdir id=2 path=a/c",
            "mkdir id=3 path=b",
            "rename id=4 from=a/c to=b/d noreplace fault=fail:9:1:0",
            "create id=5 path=b/d access=rw",
        }) == "");
}

TEST_CASE("model test finding: a failed fsync makes nothing durable", "[fs][model-fs]") {
  // Before, the model counted the data of an fsync that failed as durable, and so expected the
  // last close that failed after it to leave the file with that data, not with the bucket's.
  CHECK(replay_text({
            "mkdir id=1 path=a",
            "create id=2 path=a/f access=r excl",
            "sync id=3",
            "open id=4 path=a/f access=rw",
            "write id=5 h=4 off=117151 len=31431 data=269727534",
            "fsync id=6 h=4 fault=fail:5:2:2",
            "close id=7 h=4 fault=fail:6:1:0 fault=fail:2:1:2",
        }) == "");
}

TEST_CASE("model test finding: a failed rename's copy replaces an open file at the new name",
          "[fs][model-fs]") {
  // The copy landed over an uploaded file held open, the delete of the source failed. Before,
  // the file kept its node with its staged bytes discarded: the mount showed its old size,
  // and its close returned 0 with the copy in the bucket. Now the name is the copy, and the
  // old file's handles are those of a replaced file, as after a rename that succeeded.
  CHECK(replay_text({
            "mkdir id=1 path=y",
            "mkdir id=2 path=y/c",
            "create id=3 path=y/c/a access=r",
            "create id=4 path=y/x access=rw append",
            "open id=5 path=y/x access=rw append",
            "append id=6 h=5 len=3879 data=967452867",
            "fsync id=7 h=5",
            "rename id=8 from=y/c/a to=y/x fault=fail:8:1:1",
            "close id=9 h=5",
        }) == "");
}

TEST_CASE("model test finding: fsync through a read-only handle uploads the file's writes",
          "[fs][model-fs]") {
  // Before, an fsync through a handle opened read-only before the file was written returned 0
  // and uploaded nothing; one opened after uploaded, which the model did not expect.
  CHECK(replay_text({
            "create id=1 path=y access=rw trunc",
            "sync id=2",
            "open id=3 path=y access=r",
            "open id=4 path=y access=w",
            "write id=5 h=4 off=129026 len=14079 data=4198944945",
            "fsync id=6 h=3",
        }) == "");
  CHECK(replay_text({
            "create id=1 path=y access=rw trunc",
            "sync id=2",
            "open id=3 path=y access=w",
            "open id=4 path=y access=r",
            "ftruncate id=5 h=3 size=198114",
            "fsync id=6 h=4",
            "write id=7 h=3 off=129026 len=14079 data=4198944945",
            "close id=8 h=3 fault=fail:6:1:2",
        }) == "");
}

}  // namespace warmfs

namespace warmfs {

TEST_CASE(
    "model test finding: a directory rename over an empty one that failed shows its copies there",
    "[fs][model-fs]") {
  // The rename replaced an empty directory, its DeleteObjects failed and so did the delete of
  // the copies: they stayed below the directory it was to replace, whose listing the mount
  // had cached empty. Before, the mount went on showing it empty, and its rmdir failed with
  // ENOTEMPTY (seed 21 at 30% faulted steps, step 4,724). Now its listing is read again.
  CHECK(replay_text({
            "mkdir id=1 path=a",
            "mkdir id=2 path=a/x",
            "mkdir id=3 path=a/x/b",
            "mkdir id=4 path=y",
            "rename id=5 from=a/x to=y fault=fail:9:2:1",
            "rmdir id=6 path=y",
        }) == "");
}

TEST_CASE("model test finding: a failed truncate kept for an open reader is not durable",
          "[fs][model-fs]") {
  // The truncate of a path failed (its multipart upload could not start) with a read-only
  // handle open: the mount keeps the new size while that handle is open, and its release
  // gives up on it (docs/posix.md). Before, the model counted the failed truncate as durable
  // and expected the new size after the sync point (seed 11 at 30% faulted steps).
  CHECK(replay_text({
            "mkdir id=1 path=ckpt.tmp",
            "mkdir id=2 path=ckpt",
            "rename id=3 from=ckpt.tmp to=ckpt/b",
            "create id=4 path=ckpt/b/d access=r",
            "close id=5 h=4",
            "open id=6 path=ckpt/b/d access=r",
            "truncate id=7 path=ckpt/b/d size=131383 fault=fail:4:2:2",
        }) == "");
}

}  // namespace warmfs
