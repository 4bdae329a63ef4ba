// The reference model of the model test (model_test.cc): a tree of directories and files as
// POSIX and docs/posix.md say a warmfs mount shows it, and the random operations run against
// both. No warmfs code: the model is the specification the core is checked against.
//
// Paths are relative to the mount's root ("" is the root, "a/b" below it). A file carries a
// stable id (handles follow it through renames), its bytes as the mount shows them, and the
// bytes the bucket was last known to hold for it (`durable`: what a failed last close falls
// back to). Bytes are shared immutable strings, so a copy of the whole tree is cheap.
//
// The expected errno of an operation is a set: where POSIX lets the kernel report one of
// several errors (a rename that is both into its own subtree and onto a file), any is right.
#pragma once

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace warmfs::model {

using Bytes = std::shared_ptr<const std::string>;

inline Bytes make_bytes(std::string s) { return std::make_shared<const std::string>(std::move(s)); }

struct File {
  uint64_t id = 0;
  Bytes content = make_bytes("");
  std::optional<Bytes> durable;  // the bucket's bytes; none: not in the bucket
};

// nullopt: a directory.
using Node = std::optional<File>;

inline std::string parent_of(const std::string& p) {
  auto i = p.rfind('/');
  return i == std::string::npos ? "" : p.substr(0, i);
}
inline std::string join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}
// True if p is `dir` or below it.
inline bool at_or_below(const std::string& p, const std::string& dir) {
  return p == dir ||
         (p.size() > dir.size() && p.compare(0, dir.size(), dir) == 0 && p[dir.size()] == '/');
}

class Tree {
 public:
  std::map<std::string, Node> nodes;  // every path but the root

  bool exists(const std::string& p) const { return p.empty() || nodes.count(p) != 0; }
  bool is_dir(const std::string& p) const {
    if (p.empty()) return true;
    auto it = nodes.find(p);
    return it != nodes.end() && !it->second.has_value();
  }
  bool is_file(const std::string& p) const {
    auto it = nodes.find(p);
    return it != nodes.end() && it->second.has_value();
  }
  File& file(const std::string& p) { return *nodes.at(p); }
  const File& file(const std::string& p) const { return *nodes.at(p); }
  std::optional<std::string> path_of(uint64_t id) const {
    for (const auto& [p, n] : nodes)
      if (n && n->id == id) return p;
    return std::nullopt;
  }
  // Names directly in dir, with true for directories.
  std::map<std::string, bool> children(const std::string& dir) const {
    std::map<std::string, bool> out;
    for (const auto& [p, n] : nodes) {
      if (parent_of(p) == dir) out[p.substr(dir.empty() ? 0 : dir.size() + 1)] = !n.has_value();
    }
    return out;
  }
  // The errno resolving p's parent gives: ENOENT for a missing directory, ENOTDIR where a
  // component is a file; 0 if the parent is a directory.
  int parent_error(const std::string& p) const {
    std::string dir;
    size_t start = 0;
    const std::string parent = parent_of(p);
    while (!parent.empty() && start <= parent.size()) {
      size_t slash = parent.find('/', start);
      if (slash == std::string::npos) slash = parent.size();
      dir = parent.substr(0, slash);
      if (!exists(dir)) return ENOENT;
      if (!is_dir(dir)) return ENOTDIR;
      start = slash + 1;
    }
    return 0;
  }
  // Moves p (and, for a directory, everything below) to q, replacing what q was.
  void move(const std::string& p, const std::string& q) {
    std::map<std::string, Node> moved;
    for (auto it = nodes.begin(); it != nodes.end();) {
      if (at_or_below(it->first, p)) {
        moved[q + it->first.substr(p.size())] = std::move(it->second);
        it = nodes.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = nodes.begin(); it != nodes.end();) {
      it = at_or_below(it->first, q) ? nodes.erase(it) : std::next(it);
    }
    for (auto& [k, v] : moved) nodes[k] = std::move(v);
  }
  void remove(const std::string& p) {
    for (auto it = nodes.begin(); it != nodes.end();) {
      it = at_or_below(it->first, p) ? nodes.erase(it) : std::next(it);
    }
  }
};

enum class Kind {
  kCreate,     // open(O_CREAT [| O_EXCL] [| O_TRUNC]), a new handle
  kOpen,       // open of an existing file: read-only, read-write, write-only, O_TRUNC, O_APPEND
  kWrite,      // pwrite at an offset
  kAppend,     // write at the end (O_APPEND)
  kRead,       // pread
  kFtruncate,  // ftruncate on a handle
  kTruncate,   // truncate(path)
  kFsync,
  kClose,
  kReopen,  // close a handle, open its file again with the same flags
  kMkdir,
  kRmdir,
  kUnlink,
  kRename,  // flags: 0 or RENAME_NOREPLACE
  kSync,    // close every handle, let every cache expire, compare everything
};

inline const char* kind_name(Kind k) {
  static const char* names[] = {"create",    "open",     "write",  "append", "read",
                                "ftruncate", "truncate", "fsync",  "close",  "reopen",
                                "mkdir",     "rmdir",    "unlink", "rename", "sync"};
  return names[int(k)];
}

// A fault armed for one operation's duration: a failed call (kind 0: the next n calls of
// store operation `op` fail with status `status`), a slow one (1: each call of `op` sleeps
// `value` microseconds) or a cut-short GET (2: the next n range GETs return at most `value`
// bytes). `op` and `status` index the driver's tables.
struct Fault {
  int kind = 0, op = 0, n = 1, status = 0;
  uint32_t value = 0;
  std::string describe() const {
    switch (kind) {
      case 0:
        return "fail:" + std::to_string(op) + ":" + std::to_string(n) + ":" +
               std::to_string(status);
      case 1:
        return "slow:" + std::to_string(op) + ":" + std::to_string(value);
      default:
        return "cut:" + std::to_string(n) + ":" + std::to_string(value);
    }
  }
};

struct Operation {
  Kind kind = Kind::kSync;
  std::vector<Fault> faults;
  std::string path, path2;
  uint64_t offset = 0, length = 0;
  uint64_t id = 0;      // the step's number when it was first generated
  uint64_t handle = 0;  // the handle opened by the operation with this id
  bool excl = false, trunc = false, append = false, noreplace = false;
  int access = 0;  // O_RDONLY, O_WRONLY or O_RDWR
  uint32_t data_seed = 0;

  std::string describe() const {
    std::string s = kind_name(kind);
    s += " id=" + std::to_string(id);
    auto add = [&](const std::string& k, const std::string& v) { s += " " + k + "=" + v; };
    switch (kind) {
      case Kind::kCreate:
      case Kind::kOpen:
        add("path", path);
        add("access", access == 0 ? "r" : access == 1 ? "w" : "rw");
        if (excl) s += " excl";
        if (trunc) s += " trunc";
        if (append) s += " append";
        break;
      case Kind::kWrite:
      case Kind::kRead:
        add("h", std::to_string(handle));
        add("off", std::to_string(offset));
        add("len", std::to_string(length));
        if (kind == Kind::kWrite) add("data", std::to_string(data_seed));
        break;
      case Kind::kAppend:
        add("h", std::to_string(handle));
        add("len", std::to_string(length));
        add("data", std::to_string(data_seed));
        break;
      case Kind::kFtruncate:
        add("h", std::to_string(handle));
        add("size", std::to_string(length));
        break;
      case Kind::kTruncate:
        add("path", path);
        add("size", std::to_string(length));
        break;
      case Kind::kFsync:
      case Kind::kClose:
      case Kind::kReopen:
        add("h", std::to_string(handle));
        break;
      case Kind::kMkdir:
      case Kind::kRmdir:
      case Kind::kUnlink:
        add("path", path);
        break;
      case Kind::kRename:
        add("from", path);
        add("to", path2);
        if (noreplace) s += " noreplace";
        break;
      case Kind::kSync:
        break;
    }
    for (const Fault& f : faults) add("fault", f.describe());
    return s;
  }
};

// Reads back what describe() printed (a regression test's operations).
inline Operation parse_operation(const std::string& text) {
  Operation op;
  std::vector<std::string> words;
  size_t start = 0;
  while (start < text.size()) {
    size_t sp = text.find(' ', start);
    if (sp == std::string::npos) sp = text.size();
    if (sp > start) words.push_back(text.substr(start, sp - start));
    start = sp + 1;
  }
  for (int k = 0; k <= int(Kind::kSync); ++k)
    if (words.at(0) == kind_name(Kind(k))) op.kind = Kind(k);
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    const size_t eq = w.find('=');
    const std::string key = w.substr(0, eq),
                      value = eq == std::string::npos ? "" : w.substr(eq + 1);
    if (key == "path" || key == "from") op.path = value;
    if (key == "to") op.path2 = value;
    if (key == "off") op.offset = std::stoull(value);
    if (key == "len" || key == "size") op.length = std::stoull(value);
    if (key == "h") op.handle = std::stoull(value);
    if (key == "id") op.id = std::stoull(value);
    if (key == "data") op.data_seed = uint32_t(std::stoul(value));
    if (key == "access") op.access = value == "r" ? O_RDONLY : value == "w" ? O_WRONLY : O_RDWR;
    if (key == "excl") op.excl = true;
    if (key == "trunc") op.trunc = true;
    if (key == "append") op.append = true;
    if (key == "noreplace") op.noreplace = true;
    if (key == "fault") {
      Fault f;
      std::vector<uint32_t> nums;
      size_t p = value.find(':');
      const std::string what = value.substr(0, p);
      while (p != std::string::npos) {
        const size_t q = value.find(':', p + 1);
        nums.push_back(uint32_t(std::stoul(value.substr(p + 1, q - p - 1))));
        p = q;
      }
      if (what == "fail") f = Fault{0, int(nums.at(0)), int(nums.at(1)), int(nums.at(2)), 0};
      if (what == "slow") f = Fault{1, int(nums.at(0)), 1, 0, nums.at(1)};
      if (what == "cut") f = Fault{2, 0, int(nums.at(0)), 0, nums.at(1)};
      op.faults.push_back(f);
    }
  }
  return op;
}

// The bytes a write of op writes: a function of its seed, so a replay writes the same.
inline std::string data_of(const Operation& op) {
  std::string s(op.length, '\0');
  std::mt19937 rng(op.data_seed);
  for (auto& c : s) c = char(rng() & 0xff);
  return s;
}

// Sizes the generator keeps files within: several parts of the test's small part plan.
struct Limits {
  uint64_t max_offset = 200 << 10;
  uint64_t max_write = 40 << 10;
};

// Draws operations: mostly on paths that exist and handles that are open, some on paths
// that do not (for the errors), weighted like a training job's checkpointing plus namespace
// churn.
class Generator {
 public:
  explicit Generator(uint64_t seed, Limits limits = {}) : rng_(seed), limits_(limits) {}

  Operation next(const Tree& tree, size_t open_handles) {
    Operation op;
    op.data_seed = uint32_t(rng_());
    op.handle = rng_();  // the driver picks an open handle with it
    const uint32_t dice = pick(1000);
    const bool have = open_handles > 0;
    if (dice < 120 || (!have && dice < 500)) {
      op.kind = pick(3) == 0 ? Kind::kOpen : Kind::kCreate;
      op.path = op.kind == Kind::kOpen ? existing_file(tree) : new_or_existing(tree);
      op.access = pick(4) == 0 ? O_RDONLY : pick(2) == 0 ? O_WRONLY : O_RDWR;
      op.excl = op.kind == Kind::kCreate && pick(4) == 0;
      op.trunc = op.access != O_RDONLY && pick(5) == 0;
      op.append = op.access != O_RDONLY && !op.trunc && pick(6) == 0;
    } else if (!have && dice < 700) {
      op.kind = Kind::kMkdir;
      op.path = new_or_existing(tree);
    } else if (!have) {
      op.kind = Kind::kSync;
    } else if (dice < 380) {
      op.kind = Kind::kWrite;
      op.offset = offset();
      op.length = 1 + pick(uint32_t(limits_.max_write));
    } else if (dice < 430) {
      op.kind = Kind::kAppend;
      op.length = 1 + pick(uint32_t(limits_.max_write / 4));
    } else if (dice < 530) {
      op.kind = Kind::kRead;
      op.offset = offset();
      op.length = 1 + pick(uint32_t(limits_.max_write * 2));
    } else if (dice < 560) {
      op.kind = Kind::kFtruncate;
      op.length = offset();
    } else if (dice < 580) {
      op.kind = Kind::kTruncate;
      op.path = pick(5) == 0 ? random_path() : existing_file(tree);
      op.length = offset();
    } else if (dice < 660) {
      op.kind = Kind::kFsync;
    } else if (dice < 750) {
      op.kind = Kind::kClose;
    } else if (dice < 780) {
      op.kind = Kind::kReopen;
    } else if (dice < 830) {
      op.kind = Kind::kMkdir;
      op.path = new_or_existing(tree);
    } else if (dice < 860) {
      op.kind = Kind::kRmdir;
      op.path = pick(3) == 0 ? random_path() : existing_any(tree);
    } else if (dice < 900) {
      op.kind = Kind::kUnlink;
      op.path = pick(4) == 0 ? random_path() : existing_any(tree);
    } else if (dice < 995) {
      op.kind = Kind::kRename;
      op.path = pick(6) == 0 ? random_path() : existing_any(tree);
      op.path2 = pick(3) == 0 ? existing_any(tree) : new_or_existing(tree);
      op.noreplace = pick(5) == 0;
    } else {
      op.kind = Kind::kSync;
    }
    return op;
  }

 private:
  uint32_t pick(uint32_t n) { return n == 0 ? 0 : uint32_t(rng_() % n); }
  uint64_t offset() {
    // Mostly near the start and around part boundaries, sometimes anywhere up to the limit.
    switch (pick(4)) {
      case 0:
        return pick(4096);
      case 1:
        return pick(uint32_t(limits_.max_offset));
      case 2:
        return (64u << 10) * (1 + pick(3)) - 2048 + pick(4096);
      default:
        return pick(uint32_t(limits_.max_offset / 4));
    }
  }
  std::string random_path() {
    static const char* names[] = {"a", "b", "c", "d", "ckpt", "ckpt.tmp"};
    std::string p;
    const uint32_t depth = 1 + pick(3);
    for (uint32_t i = 0; i < depth; ++i) p = join(p, names[pick(6)]);
    return p;
  }
  std::string existing_any(const Tree& t) {
    if (t.nodes.empty()) return random_path();
    auto it = t.nodes.begin();
    std::advance(it, pick(uint32_t(t.nodes.size())));
    return it->first;
  }
  std::string existing_file(const Tree& t) {
    std::vector<std::string> files;
    for (const auto& [p, n] : t.nodes)
      if (n) files.push_back(p);
    if (files.empty()) return random_path();
    return files[pick(uint32_t(files.size()))];
  }
  std::string existing_dir(const Tree& t) {
    std::vector<std::string> dirs{""};
    for (const auto& [p, n] : t.nodes)
      if (!n) dirs.push_back(p);
    return dirs[pick(uint32_t(dirs.size()))];
  }
  // A new name in an existing directory, mostly; else any path.
  std::string new_or_existing(const Tree& t) {
    if (pick(5) == 0) return random_path();
    static const char* names[] = {"a", "b", "c", "d", "ckpt", "ckpt.tmp", "x", "y"};
    std::string dir = existing_dir(t);
    if (std::count(dir.begin(), dir.end(), '/') >= 2) dir = parent_of(dir);  // 4 levels at most
    return join(dir, names[pick(8)]);
  }

  std::mt19937_64 rng_;
  Limits limits_;
};

}  // namespace warmfs::model
