// What opendir hands readdir: a directory's entries, each at an offset that never moves while
// it is open (OpenDir), and DirStream, which reads a large directory page by page.
//
// opendir of a directory with no cached listing (Metadata::open_dir) lists its first page.
// If that is all of it, the listing is cached whole, as Metadata::list() would. If the bucket
// has more, readdir is answered from the pages read so far and asks for the next page only
// when it reaches their end: the first entries of a directory of a million objects come
// after one LIST, not a thousand. When the last page is in, the sorted copy that is cached
// (below) lives beside the stream's own entries until the directory is closed.
//
// Entries come in the bucket's key order, settled (listing_pages.h): a file "x" is given out
// once the pages reach past "x/", when it can no longer turn out to be a directory. While
// the stream runs, lookups in the directory are answered from its settled part
// (Metadata::lookup): a name found there, or absent though the pages reach past it. Other
// opendirs of the directory meanwhile read the same stream. When the last page is in, the
// whole listing is sorted, cached and kept in the listing index, as a listing read at once.
// A change this mount makes in the directory meanwhile (a create, an unlink, a rename) ends
// that: the stream's pages may predate it, so they no longer answer lookups and are not
// cached; readdir of the open directory goes on from them, as of its opendir.
//
// With MetaOptions::object_attrs, each page's entries are HEADed as it comes (the round a
// whole listing gets, a page at a time).
//
// Thread safe. Metadata must outlive every OpenDir and DirStream of it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "meta/listing_pages.h"
#include "meta/metadata.h"
#include "warmfs/result.h"

namespace warmfs {

class DirStream {
 public:
  // edits: Metadata's count of index edits when the listing began (index_listing_locked).
  DirStream(Metadata& meta, std::string dir_path, uint64_t edits);

  // Reads pages until entry i is settled or the last page is in.
  Status read_until(size_t i);
  // Entry i, reading pages as needed; null past the last entry.
  Result<const DirEntry*> at(size_t i);
  // What the pages read so far say of name (a copy of its entry in *out when found).
  ListingPages::Answer find(std::string_view name, DirEntry* out) const;
  std::chrono::steady_clock::time_point listed_at() const { return listed_at_; }
  // The whole listing, as cached, once the last page is in; null before.
  DirListingPtr listing() const;

 private:
  friend class Metadata;

  Metadata& meta_;
  const std::string dir_path_;
  const uint64_t edits_;
  const std::chrono::steady_clock::time_point listed_at_;
  const std::chrono::system_clock::time_point listed_at_wall_;

  std::mutex fetch_mu_;  // one page request at a time; held across it
  // Set (with Metadata's mutex held) when this mount changes the directory: the pages may
  // predate the change, so lookups stop asking them and the listing is not cached.
  bool outdated_ = false;

  mutable std::mutex mu_;  // guards what follows; never held across a request
  ListingPages pages_;
  DirListingPtr listing_;  // once complete
};

class OpenDir {
 public:
  explicit OpenDir(DirListingPtr listing) : listing_(std::move(listing)) {}
  explicit OpenDir(std::shared_ptr<DirStream> stream) : stream_(std::move(stream)) {}

  // Entry i (0 is the first after "." and ".."); null past the last. A stream may read its
  // next page for it; a failed page is an error, and the next call asks for it again.
  Result<const DirEntry*> at(size_t i) const;
  // Every entry, reading all pages (tests and tools).
  Result<std::vector<DirEntry>> read_all() const;
  // True while pages of the directory are still to be read.
  bool streaming() const;

 private:
  DirListingPtr listing_;
  std::shared_ptr<DirStream> stream_;
};

}  // namespace warmfs
