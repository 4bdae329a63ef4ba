// The process's malloc heap: a cap on glibc's arenas, a thread that gives freed pages back to
// the system, and what the heap holds (for `warmfs stats`). A daemon runs many threads that
// each allocate now and then (fetches, uploads, FUSE workers); glibc gives each its own arena,
// up to eight per core, and free memory inside an arena stays resident until something trims
// it. Without both, the resident set of a long-running mount climbs over hours while what it
// really holds stays flat (docs/reliability.md, "Soak").
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace warmfs {

struct HeapStats {
  uint64_t in_use_bytes = 0;  // allocated and not freed, mmapped blocks included
  uint64_t free_bytes = 0;    // free inside the heap's arenas, resident or given back
};

// mallinfo2() summed over every arena; zeros where the allocator is not glibc's.
HeapStats heap_stats();

// The arenas glibc may create: one per core, at least 2 and at most 8. Call before the
// process starts its threads.
void limit_heap_arenas();

// Calls malloc_trim(0) every `every`, which returns the whole free pages of every arena to the
// system, until destroyed. Its thread takes no signal.
class HeapTrimmer {
 public:
  explicit HeapTrimmer(std::chrono::milliseconds every);
  ~HeapTrimmer();
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

  uint64_t trims() const;  // passes done so far

 private:
  void run();

  const std::chrono::milliseconds every_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t trims_ = 0;
  std::thread thread_;
};

}  // namespace warmfs
