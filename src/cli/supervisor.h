// The supervisor of a restartable mount (`warmfs mount --restartable`, docs/reliability.md).
//
// It mounts, keeps the mount's /dev/fuse descriptor, and runs the daemon that serves it as a
// child: the warmfs binary on disk, executed again with the command line the mount was given
// and the descriptor inherited (fuse/handover.h). When the daemon exits with the mount still
// there (a crash, or `warmfs restart`, which sends the supervisor SIGUSR1) it starts a new
// one (a second after a crash); requests wait in the kernel meanwhile. It ends when the mount goes
// (umount, fusermount3 -u, warmfs unmount), or on SIGTERM/SIGINT/SIGHUP, which unmount (lazily).
// After five crashes within a minute it gives up and unmounts.
//
// Its state directory (session_state_dir) holds the file "supervisor" ("PID SERVED STARTTIME":
// its pid, how many daemons have become ready, and its start time, which tells a live
// supervisor from a killed one whose pid was reused) and what one daemon leaves the next.
#pragma once

#include <string>

#include "cli/commands.h"
#include "fuse/fuse_adapter.h"

namespace warmfs::cli {

// Keeps the command line warmfs was started with (main), for the supervisor to run again.
void keep_command_line(int argc, char** argv);

// The state directory of the restartable mount at mountpoint (an absolute, resolved path):
// /run/warmfs/<escaped mountpoint> as root, else under $XDG_RUNTIME_DIR or /tmp/warmfs-UID.
std::string session_state_dir(const std::string& mountpoint);

// Mounts as options say and supervises the daemons serving it (above); ready_fd gets the
// first daemon's readiness (cli/daemon.h). Returns the process exit status.
int run_supervisor(const FuseOptions& options, int ready_fd);

}  // namespace warmfs::cli
