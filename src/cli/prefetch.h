// Prefetch: warms files into a mount's caches by reading them through the mount.
//
// Reading through the mount is what fills every tier (memory, SSD, a cache server) with the
// same code and checks as a reader's own reads; the kernel's page cache is dropped behind
// each file (POSIX_FADV_DONTNEED) so warming a large dataset does not evict the node's
// working set. Files are read by `threads` workers in parallel, whole files each, sequentially
// (which engages the mount's read-ahead).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace warmfs::cli {

struct PrefetchProgress {
  std::atomic<uint64_t> bytes_done{0};
  std::atomic<uint64_t> files_done{0};
  std::atomic<uint64_t> errors{0};
  uint64_t bytes_total = 0;
  uint64_t files_total = 0;
};

struct PrefetchFile {
  std::string path;
  uint64_t size = 0;
};

// Expands paths (files, or directories walked recursively) into the files to read. Paths
// that cannot be read are reported through on_error and skipped.
std::vector<PrefetchFile> collect_files(const std::vector<std::string>& paths,
                                        const std::function<void(const std::string&)>& on_error);

// Reads every file; returns the number of files that failed (each reported via on_error).
uint64_t prefetch_files(const std::vector<PrefetchFile>& files, unsigned threads,
                        PrefetchProgress& progress,
                        const std::function<void(const std::string&)>& on_error);

}  // namespace warmfs::cli
