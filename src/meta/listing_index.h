// ListingIndex: directory listings kept across mounts, in a persistent key-value store (with
// --cache-dir, a RocksDB database in the cache dir: cache/kv_db.h).
//
// Metadata writes every listing it gets from the bucket here and, for a directory it has not
// listed in this mount, reads it back instead of listing: a second mount of the same prefix
// walks an indexed tree with no LIST, and revalidates what is older than the TTL in the
// background (meta/metadata.h). What this mount changes in a directory drops its entry.
//
// Key: 'L', the mount's identity (endpoint, bucket, prefix: length-prefixed), then the
// directory's path below the prefix ("" for the root), so one mount's directories are one
// key range in path order. Value (encode_listing): a version byte (1), when the bucket was
// listed (wall clock, ms), then the entries in name order, each name sharing a prefix with
// the one before it; files carry size, mtime and ETag (an MD5 ETag as its 16 bytes), a
// directory only its name. About 30 bytes per file with a 20-byte name.
//
// Not an arbiter of anything: a value that does not decode is a miss (and is dropped), and
// a store that fails is a miss and a log line (the 1st, 2nd, 4th, 8th... failure: a full
// disk does not flood the log), never a failed lookup.
//
// Thread safe (the store is; the class holds an atomic failure count besides).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/kv_store.h"
#include "meta/metadata.h"

namespace warmfs {

struct IndexedListing {
  std::vector<DirEntry> entries;  // sorted by name; directories' mtime_sec is 0
  int64_t listed_at_ms = 0;       // wall clock, Unix ms
};

// The value of a listing, and back: nullopt for anything that is not exactly one well-formed
// listing of a known version (unsorted or invalid names included). Pure functions.
std::string encode_listing(const std::vector<DirEntry>& entries, int64_t listed_at_ms);
std::optional<IndexedListing> decode_listing(std::string_view value);

class ListingIndex {
 public:
  // endpoint, bucket and prefix name the namespace: mounts that agree on all three share
  // entries.
  ListingIndex(KvStore& store, std::string_view endpoint, std::string_view bucket,
               std::string_view prefix);

  std::optional<IndexedListing> get(std::string_view dir_path) const;
  void put(std::string_view dir_path, const std::vector<DirEntry>& entries, int64_t listed_at_ms);
  // Stores an encoded value (encode_listing).
  void put_encoded(std::string_view dir_path, std::string_view value);
  void erase(std::string_view dir_path);
  // Drops dir_path's entry and those of every directory below it.
  void erase_tree(std::string_view dir_path);
  // Calls visit for every directory of this mount in the index, in path order, until it
  // returns false; values that do not decode are skipped.
  Status scan(
      const std::function<bool(std::string_view dir_path, const IndexedListing&)>& visit) const;

  const std::string& key_prefix() const { return key_prefix_; }

 private:
  std::string key(std::string_view dir_path) const;
  void report(const Status& s) const;

  KvStore& store_;
  const std::string key_prefix_;
  mutable std::atomic<uint64_t> failures_{0};
};

}  // namespace warmfs
