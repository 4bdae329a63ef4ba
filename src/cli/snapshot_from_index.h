// A snapshot of a plain mount from its listing index (meta/listing_index.h), with no LIST:
// `warmfs snapshot MNT ...` of a mount with --cache-dir reads the listings the mount keeps
// in CACHE_DIR/listings (opened read-only beside the mount, which writes it) and builds the
// manifest from them when every directory of the prefix is there, listed less than the
// mount's metadata TTL ago (docs/snapshots.md, "From a mount").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "snapshot/manifest.h"
#include "warmfs/result.h"

namespace warmfs::cli {

// The ETag of an empty object, which a snapshot from the index gives the marker "dir/" it
// records for a directory that is empty in its listing.
inline constexpr char kEmptyObjectEtag[] = "\"d41d8cd98f00b204e9800998ecf8427e\"";

// The mount's stats member that says where its listing index is and how long its listings
// are fresh: {"listing_index": {"cache_dir": ..., "ttl_ms": ...}}.
std::function<std::string()> listing_index_stats(std::string cache_dir, int64_t ttl_ms);

struct IndexSnapshotSource {
  std::string cache_dir;
  int64_t ttl_ms = 0;
  std::string endpoint;  // the mount's endpoint, bucket and prefix name its listings
  std::string bucket;
  std::string prefix;  // "" or "a/b/"
};

// The manifest from the index, or nullopt (with why in *why) when the index lacks a
// directory of the prefix or holds one listed a TTL ago or more; an error only for a
// manifest that cannot be built.
Result<std::optional<Manifest>> snapshot_from_index(const IndexSnapshotSource& src, int64_t now_ms,
                                                    int64_t created_sec, std::string* why);

}  // namespace warmfs::cli
