// Sweeping a branch's orphans: data objects (PREFIX.warmfs/branches/NAME/data/WRITER/SEQ) that
// no record names and none ever will.
//
// A branch deletes a data object as soon as a record without it is in the bucket
// (branch_store.h). Two kinds escape that: the bytes of a mount stopped between writing a
// file's data object and the record naming it (killed, or its record write failed), and the
// bytes a mount wrote after another mount took the branch over (its record writes fail). Both
// cost storage until the branch is deleted, unless swept.
//
// An object is an orphan when, against the branch's record as the bucket has it now:
//   - the record does not name it;
//   - it is not the record's writer's (that mount may be between a data object and the record
//     naming it), nor skip_writer's;
//   - it is older than the record (the bucket's Last-Modified of both, whole seconds): a mount
//     that takes the branch over after the record was read writes its bytes after its own
//     record, so they are newer.
// No record to come names such an object: a record is written only by the record's writer, or
// by a mount that takes the branch over starting from the record as it is.
//
// A pinned branch (a snapshot of it was taken: branch_record.h) sweeps nothing: the snapshot may
// read bytes an earlier record named. The pins are listed after the data objects, as a branch
// does before it deletes what a change left behind.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "objstore/object_store.h"
#include "warmfs/result.h"

namespace warmfs {

struct BranchSweep {
  uint64_t data_objects = 0;   // listed below the branch's data/ folder
  uint64_t orphans = 0;        // of those, orphans (above)
  uint64_t deleted = 0;        // orphans deleted
  uint64_t deleted_bytes = 0;  // their sizes
  bool pinned = false;         // the branch is pinned: nothing deleted
  std::string refused;         // the first orphan the bucket refused to delete, and why
};

// Finds branch `name`'s orphans (above) and deletes them unless the branch is pinned.
// skip_writer: a writer id whose objects are never orphans (the calling mount's own; may be
// empty). stop: asked between requests; true ends the sweep early with what it did so far.
// kNotFound when the branch has no record.
Result<BranchSweep> sweep_branch_orphans(ObjectStore& store, std::string_view prefix,
                                         std::string_view name, std::string_view skip_writer,
                                         const std::function<bool()>& stop = {});

}  // namespace warmfs
