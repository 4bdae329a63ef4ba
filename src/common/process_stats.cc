#include "common/process_stats.h"

#include <fstream>
#include <string>

namespace warmfs {

ProcessMemory process_memory() {
  ProcessMemory m;
  std::ifstream in("/proc/self/status");
  std::string name;
  uint64_t kib = 0;
  while (in >> name) {
    if (name == "VmRSS:" && in >> kib) m.rss_bytes = kib * 1024;
    else if (name == "VmHWM:" && in >> kib) m.rss_peak_bytes = kib * 1024;
    in.ignore(1 << 20, '\n');
  }
  return m;
}

}  // namespace warmfs
