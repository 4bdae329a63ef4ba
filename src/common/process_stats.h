// What the daemon's own process holds, for `warmfs stats`: resident memory now and at its
// peak (from /proc/self/status), the memory file of I/O buffers (common/buffer.h) and the
// malloc heap (common/heap.h).
#pragma once

#include <cstdint>

namespace warmfs {

struct ProcessMemory {
  uint64_t rss_bytes = 0;       // VmRSS
  uint64_t rss_peak_bytes = 0;  // VmHWM
  // The memory file of fill buffers (common/buffer.h), mapped or not.
  uint64_t memory_file_bytes = 0;
  // All the memory the process holds: its resident set without the shared-memory pages it
  // maps (RssShmem, which are the memory file's), plus the memory file.
  uint64_t held_bytes = 0;
  // The malloc heap (common/heap.h): allocated, and free inside its arenas.
  uint64_t heap_in_use_bytes = 0;
  uint64_t heap_free_bytes = 0;
};

// Zeros where /proc is unreadable.
ProcessMemory process_memory();

}  // namespace warmfs
