// The libfuse low-level adapter: the only code that includes libfuse.
//
// Each callback unpacks its request, calls the Filesystem core, and replies exactly once.
// State travels through the session's userdata; there are no globals. Open file and
// directory handles are heap objects whose pointers ride in fuse_file_info::fh.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "fs/filesystem.h"
#include "warmfs/result.h"

namespace warmfs {

struct FuseOptions {
  std::string mountpoint;
  std::string fsname = "warmfs";
  bool allow_other = false;
  bool read_only = true;
  // How long the kernel trusts entries and attributes (the metadata TTL), and negative lookups.
  double entry_timeout_sec = 60;
  double attr_timeout_sec = 60;
  double negative_timeout_sec = 60;
  // Worker threads serving /dev/fuse (the loop starts more when all are busy, up to this).
  unsigned max_threads = 16;
  // Kernel read-ahead for the mount, raised after mounting (FUSE defaults to 128 KiB).
  unsigned read_ahead_kb = 4096;
  // Largest read request (max_read, max_pages): 1 MiB, one chunk.
  unsigned max_request_bytes = 1 << 20;
};

// Mounts at options.mountpoint and serves until unmounted or sent SIGTERM/SIGINT.
// on_ready is called once: with ok once the mount answers, or with the reason it failed.
// Returns 0 after a clean unmount, non-zero on failure.
int run_fuse(Filesystem& fs, const FuseOptions& options,
             const std::function<void(const Status&)>& on_ready);

// Unmounts a FUSE mount at path (umount2 as root, else fusermount3 -u).
Status unmount_path(const std::string& path);

}  // namespace warmfs
