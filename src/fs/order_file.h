// The order file: how a loader tells warmfs the order of an epoch (docs/loaders.md).
//
// A text file, written whole to MOUNT/.warmfs/order (the control file the core serves
// itself; nothing of it reaches the bucket) and taken when it is closed:
//
//     warmfs-order 1
//     train/00042.jpg
//     shards/shard-0003.tar 1048576 102400
//
// The first line names the format and its version. Then one entry per line, in the order
// the loader will read them: a path relative to the mount's root, for a whole file, or a
// path, an offset and a length (decimal bytes) for a range of it. Fields are separated by
// one space or tab. In paths, '%', whitespace and control characters are written as %XX
// (two hex digits), so any name can be given. Blank lines and lines starting with '#' are
// ignored. A path may not be absolute, nor have empty, "." or ".." components.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "readahead/order_prefetch.h"
#include "warmfs/result.h"

namespace warmfs {

inline constexpr std::string_view kOrderHeader = "warmfs-order 1";

// The entries of an order file; kInvalidArgument with "line N: why" for the first bad line.
Result<std::vector<OrderEntry>> parse_order(std::string_view text);
// A path as an order file writes it (%XX for '%', whitespace and control characters).
std::string escape_order_path(std::string_view path);

}  // namespace warmfs
