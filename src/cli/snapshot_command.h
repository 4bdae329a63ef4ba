// warmfs snapshot: writes the namespace of s3://BUCKET[/PREFIX], or of a mounted prefix, to a
// manifest file or into the bucket under a name (docs/snapshots.md); and the mount side of
// --snapshot: the store that serves a mount from a manifest.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "objstore/object_store.h"
#include "snapshot/branch_store.h"
#include "snapshot/snapshot_store.h"
#include "warmfs/result.h"

namespace warmfs::cli {

struct SnapshotArgs {
  std::string source;  // s3://bucket[/prefix], or a warmfs mountpoint
  std::string file;    // where the manifest goes (or name)
  std::string name;    // store it in the bucket under this name (stored_snapshot.h)
  std::string endpoint;
  std::string region;
  std::string profile;
  bool no_sign_request = false;
  bool path_style = false;
  bool versions = false;    // record version ids (ListObjectVersions)
  size_t concurrency = 32;  // listings in flight
};

int run_snapshot(const SnapshotArgs& args);

// A part of a mount's stats (FsOptions::extra_stats) that lets `warmfs snapshot MNT` find
// where the mount comes from: {"source": {"endpoint", "region", "path_style", "snapshot",
// "snapshot_keys", "snapshot_created"}} (the snapshot's members only with a snapshot, so that
// a copy can check it is of the manifest mounted). No secrets.
std::function<std::string()> mount_source_stats(std::string endpoint, std::string region,
                                                bool path_style, std::string snapshot,
                                                const Manifest* manifest);

// What --snapshot names: an existing file (made absolute: the daemon runs in /), or else the
// name of a snapshot stored in the bucket. kNotFound when it is neither.
Result<std::string> resolve_snapshot_arg(const std::string& value);

// The store a mount with --snapshot reads through: the manifest (an absolute file path or a
// stored snapshot's name, from resolve_snapshot_arg) over the bucket's store.
// kInvalidArgument when the manifest is of another bucket or prefix, or versions are asked
// of a manifest taken without them.
Result<std::unique_ptr<SnapshotStore>> open_snapshot_store(const std::string& file,
                                                           const std::string& bucket,
                                                           const std::string& prefix, bool versions,
                                                           ObjectStore& bucket_store);

// The store a mount with --snapshot and --branch reads and writes through: branch `name` of
// the snapshot, opened for writing unless read_only (docs/snapshots.md, "Branches"); read
// only, its record is read again once older than refresh_after (the metadata TTL). Logs how
// long opening (or creating) the branch took.
Result<std::unique_ptr<BranchStore>> open_branch_store(const std::string& name,
                                                       const std::string& snapshot, bool read_only,
                                                       std::chrono::milliseconds refresh_after,
                                                       SnapshotStore& snapshot_store,
                                                       ObjectStore& bucket_store);

// A part of a branch mount's stats: {"branch": {"name", "entries", "writer", and once a
// writer's sweep has ended "orphans_swept"}}; `warmfs
// snapshot MNT` refuses a branch mount by it.
std::function<std::string()> branch_stats(const BranchStore& branch);

}  // namespace warmfs::cli
