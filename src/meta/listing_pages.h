// ListingPages: one directory's entries built from its ListObjectsV2 pages (delimiter "/"),
// page by page, in the bucket's key order.
//
// A key that is both a file "x" and a prefix "x/" is one entry, the directory (as everywhere
// in Metadata). The file's key comes first and the prefix may come pages later (after "x-a"
// and "x.b", which sort before "x/"), so a file entry is settled, final, only once the pages
// read reach past "x/"; until then it may still turn into the directory. Entries [0,
// settled()) are final and keep their offsets: readdir gives them out while the rest of a
// large directory is still to be listed (DirStream), and they answer lookups by name.
//
// Keys that cannot be names (is_valid_name) are skipped with a log line; the root's reserved
// folder (common/reserved_names.h) is left out.
//
// Not thread safe; DirStream guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "meta/metadata.h"
#include "objstore/object_store.h"
#include "warmfs/result.h"

namespace warmfs {

class ListingPages {
 public:
  // prefix: the directory's key ("" or "a/b/"); root: it is the mount's root (its reserved
  // folder is not shown); dir_mtime_sec: the mtime directories get.
  ListingPages(std::string prefix, bool root, int64_t dir_mtime_sec);

  // The request for the next page.
  ListRequest next_request() const;
  // Adds one page. kCorrupt for a truncated page without a continuation token.
  Status add(ListPage page);
  // The last page is in.
  bool complete() const { return complete_; }

  size_t size() const { return entries_.size(); }
  // Entries [0, settled()) are final.
  size_t settled() const { return settled_; }
  const DirEntry& at(size_t i) const { return entries_[i]; }
  uint64_t skipped() const { return skipped_; }

  enum class Answer { kUnknown, kAbsent, kFound };
  // What the pages read say of name: its settled entry (*out), absent (the pages reach past
  // every key it could have), or not known yet.
  Answer find(std::string_view name, const DirEntry** out) const;

  // Frees the index of names (a stream whose listing is cached: lookups go there); find()
  // then answers kUnknown.
  void drop_names();

  // Every entry, sorted by name, as DirListing keeps them; copied (sorted()) or moved out.
  std::vector<DirEntry> sorted() const;
  std::vector<DirEntry> take_sorted() &&;

 private:
  void add_entry(DirEntry e);
  // True if the pages read show that no key after them can change e.
  bool final(const DirEntry& e) const;
  // True if name + "/" sorts at or before the last key read (relative to the prefix).
  bool reached(std::string_view name) const;

  std::string prefix_;
  bool root_;
  int64_t dir_mtime_sec_;
  // A deque: entries keep their addresses as pages come (readdir holds one while it looks it
  // up), and by_name_ points into their names.
  std::deque<DirEntry> entries_;
  std::unordered_map<std::string_view, size_t> by_name_;
  size_t settled_ = 0;
  std::string last_;   // the greatest key or prefix read, without the directory's prefix
  std::string token_;  // for the next page
  bool complete_ = false;
  bool names_dropped_ = false;
  uint64_t skipped_ = 0;
};

}  // namespace warmfs
