// The journal of a restartable mount (fuse/handover.h): what each node id the kernel holds
// names and which file handles are open, kept in a file a later daemon reads back after a
// restart or a crash. The file is outside input to the daemon that reads it (a crash can tear
// its last line, and anything can be in it), so parse_journal() takes any bytes.
//
// One line per event, fields separated by a space, names in hex:
//   L node parent name         a reply handed out node, named name in parent (one lookup)
//   N node parent name n       the same with n lookups (a compacted journal)
//   F node n                   the kernel forgot n lookups of node
//   R parent name newparent newname   a rename
//   H token node flags dir     an open file (dir 0) or directory (dir 1) handle
//   X token                    its release
// A line that does not read whole is skipped; lines after it still count.
//
// Not thread-safe: the handover keeps one JournalState and one JournalFile under its lock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "warmfs/result.h"

namespace warmfs::handover {

// A node id the kernel holds.
struct JournalNode {
  uint64_t parent = 0;
  std::string name;
  uint64_t nlookup = 0;
};

// A file handle the kernel holds, by its token.
struct JournalHandle {
  uint64_t nodeid = 0;
  uint32_t flags = 0;  // the open flags
  bool dir = false;
  uint64_t local = 0;  // this daemon's handle once it has one; not journaled
};

// What a journal says.
struct JournalState {
  std::map<uint64_t, JournalNode> nodes;      // by node id
  std::map<uint64_t, JournalHandle> handles;  // by token

  void looked_up(uint64_t node, uint64_t parent, std::string name, uint64_t n = 1);
  // A node forgotten as many times as it was looked up is dropped.
  void forgot(uint64_t node, uint64_t n);
  void renamed(uint64_t parent, const std::string& name, uint64_t new_parent,
               const std::string& new_name);
  // "/a/b" for a node below the root; "node N" where the chain is broken.
  std::string path_of(uint64_t node) const;
};

JournalState parse_journal(std::string_view text);
// The journal that says `state` in the fewest lines (N and H lines).
std::string compact_journal(const JournalState& state);

std::string lookup_line(uint64_t node, uint64_t parent, const std::string& name);
std::string forget_line(uint64_t node, uint64_t n);
std::string rename_line(uint64_t parent, const std::string& name, uint64_t new_parent,
                        const std::string& new_name);
std::string handle_line(uint64_t token, const JournalHandle& h);
std::string release_line(uint64_t token);

// The journal's file: appended one write per line (O_APPEND, so a crash loses at most the
// line being written), rewritten whole when compacted.
class JournalFile {
 public:
  explicit JournalFile(std::string path) : path_(std::move(path)) {}
  ~JournalFile();
  JournalFile(const JournalFile&) = delete;
  JournalFile& operator=(const JournalFile&) = delete;

  // Replaces the file with text (atomically) and appends to it from then on. On failure
  // bytes() starts again from 0, so a caller that compacts by size tries again later.
  Status rewrite(const std::string& text);
  // Logs a failed write; the journal then misses that line.
  void append(const std::string& lines);
  uint64_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  int fd_ = -1;
  uint64_t bytes_ = 0;
};

// Writes path whole, through a temporary and a rename, or fails (errno set).
bool write_file_atomic(const std::string& path, const void* data, size_t size);
// The file's bytes; empty when it cannot be read.
std::string read_whole_file(const std::string& path);

}  // namespace warmfs::handover
