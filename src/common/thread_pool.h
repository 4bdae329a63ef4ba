// ThreadPool: a fixed number of threads running queued tasks in FIFO order.
//
// For blocking work (range GETs): each thread runs one task at a time, so the thread count
// is the concurrency. No futures or priorities; callers that need a result pass it through
// shared state of their own. shutdown() stops accepting tasks, lets the threads finish what
// is already queued, and joins them; the destructor calls it. Tasks report errors as values;
// an exception that escapes a task anyway is logged and the thread goes on to the next task
// (it never terminates the process from a pool thread).
//
// Thread safe: submit() and shutdown() may be called from any thread, including from tasks
// (but a task calling shutdown() would wait for itself: don't).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace warmfs {

class ThreadPool {
 public:
  // Starts `threads` threads (at least one). name (up to 15 bytes) labels them in top/gdb.
  explicit ThreadPool(size_t threads, std::string name = "warmfs-pool");
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Queues task. Returns false, without running it, once shutdown() has begun.
  bool submit(std::function<void()> task);
  // Stops accepting, runs the tasks already queued, joins the threads. Idempotent.
  void shutdown();

  size_t size() const { return threads_.size(); }
  // Tasks queued and not yet started.
  size_t queued() const;

 private:
  void run();
  void run_task(const std::function<void()>& task) noexcept;

  mutable std::mutex mu_;       // protects queue_ and stopping_
  std::condition_variable cv_;  // signalled on a new task and on shutdown
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  // Serializes shutdown() callers around the joins. Never held with mu_: shutdown() lets mu_
  // go before taking it.
  std::mutex join_mu_;
  std::vector<std::thread> threads_;  // fixed after construction
  const std::string name_;
};

}  // namespace warmfs
