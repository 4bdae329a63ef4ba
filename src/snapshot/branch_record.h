// BranchRecord: what a writable branch of a snapshot changed, as stored in the bucket.
//
// A branch is the snapshot's namespace plus an overlay of entries, one per name the branch
// changed (key relative to the prefix):
//   - data: the name's bytes are the object data/ID below the branch's folder (written by
//     the branch: a new or modified file), with the size, ETag and mtime it was written with;
//   - snapshot: the name shows the snapshot's entry `source` (a rename or copy of a file the
//     branch never changed: no byte is copied), pinned as the snapshot pins it;
//   - deleted: the name is gone from the branch (the snapshot still has it).
// Names without an entry are the snapshot's.
//
// In the bucket: PREFIX.warmfs/branches/NAME/record (this record, JSON, versioned) and
// PREFIX.warmfs/branches/NAME/data/WRITER/SEQ (the bytes). docs/snapshots.md, "Branches".
//
// Plain data and pure functions, and the record's reads and pins in the bucket; thread safe as
// the store is.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "objstore/object_store.h"
#include "snapshot/manifest.h"
#include "warmfs/result.h"

namespace warmfs {

inline constexpr uint32_t kBranchRecordVersion = 1;

struct BranchEntry {
  enum class Kind { kData, kSnapshot, kDeleted };
  Kind kind = Kind::kDeleted;
  // kData: the object below the branch's data/ folder ("WRITER/SEQ"); kSnapshot: the key of
  // the snapshot's entry (relative to the prefix).
  std::string target;
  // kData and kSnapshot: what a listing shows.
  uint64_t size = 0;
  std::string etag;
  int64_t mtime_sec = 0;

  bool operator==(const BranchEntry&) const = default;
};

struct BranchRecord {
  std::string bucket;
  std::string prefix;  // "" or ending in '/'
  std::string branch;  // its name
  // The snapshot it branches from: as named at its creation, and what identifies it.
  std::string snapshot;
  uint64_t snapshot_keys = 0;
  int64_t snapshot_created = 0;
  // The mount that writes the branch (one writer per branch) and how many times the record
  // was written.
  std::string writer;
  uint64_t generation = 0;
  int64_t created_sec = 0;
  int64_t updated_sec = 0;
  std::map<std::string, BranchEntry, std::less<>> entries;  // by key relative to the prefix

  bool operator==(const BranchRecord&) const = default;
};

// PREFIX.warmfs/branches/NAME/ (ends in '/').
std::string branch_root(std::string_view prefix, std::string_view name);
// The record's key, and the data folder's (both below branch_root).
std::string branch_record_key(std::string_view prefix, std::string_view name);
std::string branch_data_root(std::string_view prefix, std::string_view name);
// Pins (PREFIX.warmfs/branches/NAME/pins/): while there is one, the branch deletes none of its
// data objects (a snapshot of the branch may read them).
std::string branch_pins_root(std::string_view prefix, std::string_view name);

// The record as JSON (docs/snapshots.md, "The record").
std::string encode_branch_record(const BranchRecord& r);
// kCorrupt for bytes that are not a branch record; kNotSupported for a newer version.
Result<BranchRecord> decode_branch_record(std::string_view bytes);

// Reads branch `name` of prefix's record from the bucket (a HEAD and a GET pinned to its ETag;
// head, when given, gets what the HEAD said: its ETag and Last-Modified). kNotFound when there
// is none.
Result<BranchRecord> load_branch_record(ObjectStore& store, std::string_view prefix,
                                        std::string_view name, ObjectInfo* head = nullptr);

// Stores pin `pin` of branch `name` (branch_pins_root): from then on the branch keeps every
// data object, so a snapshot of it taken after the pin reads them for as long as the branch
// exists.
Status pin_branch(ObjectStore& store, std::string_view prefix, std::string_view name,
                  std::string_view pin);

// Branch r of snapshot base as a snapshot of its own: every name it shows, each with the key
// its bytes are at (a location: the branch's data object, or the snapshot's key). kInvalidArgument
// when r is not a branch of base; kCorrupt for a record naming what base lacks.
Result<Manifest> branch_manifest(const Manifest& base, const BranchRecord& r, int64_t created_sec);

}  // namespace warmfs
