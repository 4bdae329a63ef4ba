#include "common/process_stats.h"

#include <algorithm>
#include <fstream>
#include <string>

#include "common/buffer.h"
#include "common/heap.h"

namespace warmfs {

ProcessMemory process_memory() {
  ProcessMemory m;
  std::ifstream in("/proc/self/status");
  std::string name;
  uint64_t kib = 0;
  uint64_t shmem = 0;
  while (in >> name) {
    if (name == "VmRSS:" && in >> kib)
      m.rss_bytes = kib * 1024;
    else if (name == "VmHWM:" && in >> kib)
      m.rss_peak_bytes = kib * 1024;
    else if (name == "RssShmem:" && in >> kib)
      shmem = kib * 1024;
    in.ignore(1 << 20, '\n');
  }
  m.memory_file_bytes = buffer_file_resident_bytes();
  m.held_bytes = m.rss_bytes - std::min(shmem, m.rss_bytes) + m.memory_file_bytes;
  const HeapStats heap = heap_stats();
  m.heap_in_use_bytes = heap.in_use_bytes;
  m.heap_free_bytes = heap.free_bytes;
  return m;
}

}  // namespace warmfs
