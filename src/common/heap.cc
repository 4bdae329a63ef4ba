#include "common/heap.h"

#include <malloc.h>

#include <algorithm>

namespace warmfs {

HeapStats heap_stats() {
  const struct mallinfo2 mi = ::mallinfo2();
  return HeapStats{mi.uordblks + mi.hblkhd, mi.fordblks};
}

void limit_heap_arenas() {
  const unsigned cores = std::thread::hardware_concurrency();
  const int arenas = static_cast<int>(std::clamp(cores, 2u, 8u));
  ::mallopt(M_ARENA_MAX, arenas);
}

HeapTrimmer::HeapTrimmer(std::chrono::milliseconds every)
    : every_(every), thread_([this] { run(); }) {}

HeapTrimmer::~HeapTrimmer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

uint64_t HeapTrimmer::trims() const {
  std::lock_guard lock(mu_);
  return trims_;
}

void HeapTrimmer::run() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, every_, [this] { return stop_; })) {
    lock.unlock();
    ::malloc_trim(0);
    lock.lock();
    ++trims_;
  }
}

}  // namespace warmfs
