// Names warmfs keeps for itself in a bucket (docs/snapshots.md).
#pragma once

#include <string_view>

namespace warmfs {

// The folder directly below a mounted or snapshotted prefix that holds warmfs's own objects
// (snapshots stored in the bucket: PREFIX.warmfs/snapshots/NAME). Mounts do not show it and
// snapshots leave it out.
inline constexpr std::string_view kReservedDirName = ".warmfs";

}  // namespace warmfs
