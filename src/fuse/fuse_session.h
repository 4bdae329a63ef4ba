// The life of a FUSE mount: mount, serve until unmounted or signalled, unmount. The callbacks
// that serve its requests are fuse_adapter.h's.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fs/filesystem.h"
#include "fuse/fuse_adapter.h"
#include "warmfs/result.h"

namespace warmfs {

// Mounts at options.mountpoint and serves until unmounted or sent SIGTERM/SIGINT.
// on_ready is called once: with ok once the mount answers, or with the reason it failed.
// Returns 0 after a clean unmount, non-zero on failure.
int run_fuse(Filesystem& fs, const FuseOptions& options,
             const std::function<void(const Status&)>& on_ready);

// The arguments fuse_session_new takes for a mount with these options ("-o" and the mount
// options), for every session of a mount: its daemon's and a restartable mount's
// (fuse/handover.h).
std::vector<std::string> fuse_session_args(const FuseOptions& options);

// Raises the kernel read-ahead of the mount at options.mountpoint (logs when it cannot).
void raise_read_ahead(const FuseOptions& options);

// Unmounts a FUSE mount at path (umount2 as root, else fusermount3 -u).
Status unmount_path(const std::string& path);

}  // namespace warmfs
