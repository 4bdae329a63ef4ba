// Restartable mounts (docs/reliability.md): a FUSE session that outlives the daemon serving it.
//
// A supervisor (cli/supervisor.h) mounts with mount_session_fd() and keeps the /dev/fuse
// descriptor; each daemon it starts inherits that descriptor and serves it with
// run_fuse_on_fd(). The kernel keeps the connection while any process holds the descriptor,
// so a daemon that exits or crashes leaves requests queued, not failed.
//
// run_fuse_on_fd() runs libfuse's session through its own read and writev
// (fuse_session_custom_io) and keeps, in a state directory the supervisor owns:
//  - "init": the kernel's INIT request, which the kernel sends once per mount. A later daemon
//    feeds libfuse a copy, drops libfuse's answer (the kernel has its answer), then writes
//    FUSE_NOTIFY_RESEND: the kernel queues again every request the daemon before it read and
//    did not answer (their `unique` carries bit 63), and this daemon answers them.
//  - "journal": what each node id the kernel holds names (parent id and name, from every
//    reply that hands one out, renames, and the kernel's forgets) and each open file handle
//    (node id and open flags), written before the reply reaches the kernel. A later daemon
//    replays it (Filesystem::adopt), so every node id the kernel holds names the same path.
//  - "generation": how many daemons have served the mount.
// File handles the kernel sees are tokens (generation << 40 | counter), translated to the
// daemon's own handles on each request, so a handle of an earlier daemon is never taken for
// one of this daemon. A read on an earlier daemon's read-only handle reopens the file; a
// write, fsync or flush on an earlier daemon's handle of a file open for writing fails with
// EIO and a log line naming the file (what it wrote and had not flushed is gone with that
// daemon; what close or fsync had reported done is in the bucket).
//
// Thread safety: the read and writev hooks run on every FUSE worker thread; one mutex guards
// the request table, the handle table and the journal.
#pragma once

#include <functional>
#include <string>

#include "fs/filesystem.h"
#include "fuse/fuse_adapter.h"
#include "warmfs/result.h"

namespace warmfs {

// Mounts at options.mountpoint and returns the session's /dev/fuse descriptor, which
// survives exec (no FD_CLOEXEC). Nothing serves it yet: the kernel's INIT waits on it.
Result<int> mount_session_fd(const FuseOptions& options);

// Serves the mounted session on fd (inherited) until the mount goes or SIGTERM/SIGINT/SIGHUP;
// never unmounts. state_dir holds what the next daemon takes over (above). on_ready as for
// run_fuse. Returns 0 after a clean stop, non-zero on failure.
int run_fuse_on_fd(Filesystem& fs, const FuseOptions& options, int fd, const std::string& state_dir,
                   const std::function<void(const Status&)>& on_ready);

}  // namespace warmfs
