// take_snapshot: lists every key below a prefix, in parallel, into a Manifest.
//
// The key space is split by directory: each prefix is listed with delimiter "/" (all its
// pages), and every common prefix it names becomes a new listing, queued for a pool of
// `concurrency` threads. A tree of many directories lists with that many requests in flight.
// One flat directory lists in parallel too: when a listing's page comes back truncated and its
// rest looks large (split_key_range guesses from the names seen), the rest is cut at boundary
// keys into ranges, each listed from start-after its lower boundary until a name past its
// upper one, and cut again when it turns out large. Names past a range's end are dropped, a
// directory named by two ranges is listed once: the manifest holds each key once, as a serial
// listing would.
// Keys under the prefix's reserved folder (kReservedDirName: stored snapshots) are left out.
//
// Thread safety: the function is reentrant; the store must be thread safe (every
// ObjectStore is).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/reserved_names.h"
#include "objstore/object_store.h"
#include "snapshot/manifest.h"
#include "warmfs/result.h"

namespace warmfs {

struct SnapshotListOptions {
  // Listings in flight at once. S3 serves thousands of LISTs a second per prefix; 32 keeps a
  // single client's connections busy without being throttled.
  size_t concurrency = 32;
  // Record each key's latest version id (ListObjectVersions), so reads are pinned to the
  // version rather than checked against the ETag.
  bool versions = false;
};

struct SnapshotListStats {
  std::atomic<uint64_t> keys{0};
  std::atomic<uint64_t> list_requests{0};
};

// Lists prefix ("" or ending in '/') of the store's bucket. bucket names the bucket in the
// manifest; created_sec is the time recorded in it. stats, when given, counts as it goes.
Result<Manifest> take_snapshot(ObjectStore& store, const std::string& bucket,
                               const std::string& prefix, int64_t created_sec,
                               const SnapshotListOptions& options,
                               SnapshotListStats* stats = nullptr);

}  // namespace warmfs
