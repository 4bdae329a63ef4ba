#include "common/heap.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <functional>

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

namespace {

// Starts f on a thread that takes no signal: a process that waits for SIGTERM with sigwait
// (the cache server) blocks it in its threads, and a thread started before it did so would
// take the signal and end the process.
std::thread without_signals(std::function<void()> f) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  std::thread t(std::move(f));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return t;
}

}  // namespace

HeapTrimmer::HeapTrimmer(std::chrono::milliseconds every)
    : every_(every), thread_(without_signals([this] { run(); })) {}

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
