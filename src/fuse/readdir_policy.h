// Which READDIRPLUS replies carry attributes (docs/posix.md#listings).
//
// An entry of a READDIRPLUS reply that carries attributes makes the kernel build an inode and
// a dentry for it, so a later stat() or open() asks the daemon nothing. That pays for itself
// only when the caller looks at the entries: `ls -l`, `du`, rsync, a loader that opens every
// file. A walk that reads names alone (find, os.walk, a loader's index of paths) pays it for
// every entry of every directory (kernel time and a lookup in the daemon per entry; the find
// rows of docs/benchmarks.md measure it), while its directories are all it opens.
//
// The kernel's own choice (FUSE_CAP_READDIRPLUS_AUTO) asks with attributes for the first
// request of a directory and for later ones only after lookups in it; but glibc and find read
// a warmfs directory with a 1 MiB buffer (st_blksize), so the first request is the whole of a
// directory of a few thousand entries. The policy decides per calling thread instead, by what
// it did with the last names it got: a caller is answered with names only (and d_type) until
// it looks up files it was given that way, kLookupsToLearn of them in the directory it last
// listed; from then on it gets attributes. So `find` never builds an inode per file, and
// `ls -lR` pays a lookup per entry in its first directory only.
//
// Thread safe. No libfuse: the unit tests link it alone.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace warmfs {

class ReaddirPolicy {
 public:
  // always_attributes: every reply carries attributes (--readdirplus-always).
  explicit ReaddirPolicy(bool always_attributes = false) : always_(always_attributes) {}

  // Whether a READDIRPLUS reply from directory `dir` to thread `tid` carries attributes.
  bool attributes_for(uint32_t tid, uint64_t dir);
  // Thread `tid` looked up a name in `dir` and found a file (is_dir false) or a directory.
  void looked_up(uint32_t tid, uint64_t dir, bool is_dir);

  // Threads learned to want attributes so far (for tests and stats).
  uint64_t learned() const;

  static constexpr uint32_t kLookupsToLearn = 2;
  // Threads remembered at once; past it the record starts again (a bound, not a policy).
  static constexpr size_t kMaxCallers = 4096;

 private:
  struct Caller {
    uint64_t names_only_dir = 0;  // the directory last answered with names only
    uint32_t lookups = 0;         // files looked up in it since
    bool attributes = false;      // learned: it looks at what it lists
  };

  const bool always_;
  mutable std::mutex mu_;
  std::unordered_map<uint32_t, Caller> callers_;
  uint64_t learned_ = 0;
};

}  // namespace warmfs
