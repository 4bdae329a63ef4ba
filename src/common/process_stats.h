// What the daemon's own process holds, for `warmfs stats`: resident memory now and at its
// peak (from /proc/self/status), and the I/O buffer pool (common/buffer.h).
#pragma once

#include <cstdint>

namespace warmfs {

struct ProcessMemory {
  uint64_t rss_bytes = 0;       // VmRSS
  uint64_t rss_peak_bytes = 0;  // VmHWM
};

// Zeros where /proc is unreadable.
ProcessMemory process_memory();

}  // namespace warmfs
