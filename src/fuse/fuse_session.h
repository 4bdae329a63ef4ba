// The life of a FUSE mount: mount, serve until unmounted or signalled, unmount. The callbacks
// that serve its requests are fuse_adapter.h's.
#pragma once

#include <functional>
#include <string>

#include "fs/filesystem.h"
#include "fuse/fuse_adapter.h"
#include "warmfs/result.h"

namespace warmfs {

// Mounts at options.mountpoint and serves until unmounted or sent SIGTERM/SIGINT.
// on_ready is called once: with ok once the mount answers, or with the reason it failed.
// Returns 0 after a clean unmount, non-zero on failure.
int run_fuse(Filesystem& fs, const FuseOptions& options,
             const std::function<void(const Status&)>& on_ready);

// Unmounts a FUSE mount at path (umount2 as root, else fusermount3 -u).
Status unmount_path(const std::string& path);

}  // namespace warmfs
