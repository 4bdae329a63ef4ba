// The libfuse low-level adapter: the callbacks (fuse_adapter.cc) and the life of a mount
// (fuse_session.h); the only code that includes libfuse.
//
// Each callback unpacks its request, calls the Filesystem core, and replies exactly once.
// State travels through the session's userdata (a FuseCallbackState); there are no globals.
// Open file and directory handles are heap objects whose pointers ride in fuse_file_info::fh.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include "fs/filesystem.h"
#include "fuse/readdir_policy.h"
#include "warmfs/result.h"

struct fuse_lowlevel_ops;

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
  // Every READDIRPLUS reply carries attributes, instead of learning per caller whether it
  // looks at them (readdir_policy.h).
  bool readdirplus_always = false;
};

// What every callback finds in the session's userdata.
struct FuseCallbackState {
  Filesystem& fs;
  const FuseOptions& options;
  // The file and directory handles the kernel holds (opened, not released yet), as in
  // fuse_file_info::fh.
  struct OpenHandles {
    std::mutex mu;
    std::unordered_set<uint64_t> files;
    std::unordered_set<uint64_t> dirs;
  };
  std::unique_ptr<OpenHandles> open = std::make_unique<OpenHandles>();
  // Which READDIRPLUS replies carry attributes.
  std::unique_ptr<ReaddirPolicy> readdir =
      std::make_unique<ReaddirPolicy>(options.readdirplus_always);

  // A handle given to the kernel (its fuse_file_info::fh), kept in `open` until released.
  uint64_t keep_file(std::unique_ptr<FileHandle> h);
  uint64_t keep_dir(OpenDirPtr dir);
};

// Releases the handles the kernel never released: a RELEASE it sends after the session's loop
// stopped (a close racing an unmount or a SIGTERM) is never read. Call once the loop stopped.
void release_open_handles(FuseCallbackState& state);

// Sets the callbacks warmfs implements in ops; the session's userdata must be a
// FuseCallbackState that outlives it.
void fill_fuse_ops(fuse_lowlevel_ops& ops);

}  // namespace warmfs
