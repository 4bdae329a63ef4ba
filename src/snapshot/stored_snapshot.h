// Snapshots stored in the bucket, next to the data they describe, under a name:
// the object PREFIX.warmfs/snapshots/NAME (common/reserved_names.h), so a snapshot is found
// by whoever can read the data, and mounts of PREFIX do not show it.
//
// Thread safety: as the store's.
#pragma once

#include <string>
#include <string_view>

#include "objstore/object_store.h"
#include "snapshot/manifest.h"
#include "warmfs/result.h"

namespace warmfs {

// True for a name a snapshot can be stored under: 1 to 128 of [A-Za-z0-9._-], not "." or "..".
bool is_snapshot_name(std::string_view name);

// The key of snapshot `name` of prefix ("" or ending in '/').
std::string stored_snapshot_key(std::string_view prefix, std::string_view name);

// Writes m into its bucket as snapshot `name` of its prefix (replacing one of that name).
Status store_snapshot(ObjectStore& store, const Manifest& m, std::string_view name);

// Reads snapshot `name` of prefix from the bucket: a HEAD and a GET pinned to its ETag.
// kNotFound (naming the key) when there is none.
Result<Manifest> load_stored_snapshot(ObjectStore& store, std::string_view prefix,
                                      std::string_view name);

}  // namespace warmfs
