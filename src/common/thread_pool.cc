#include "common/thread_pool.h"

#include <pthread.h>

#include <exception>
#include <utility>

#include "common/log.h"

namespace warmfs {

ThreadPool::ThreadPool(size_t threads, std::string name) : name_(std::move(name)) {
  if (threads == 0) threads = 1;
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([this] { run(); });
    pthread_setname_np(threads_.back().native_handle(), name_.substr(0, 15).c_str());
  }
}

ThreadPool::~ThreadPool() { shutdown(); }

bool ThreadPool::submit(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void ThreadPool::shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  std::lock_guard join_lock(join_mu_);
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

size_t ThreadPool::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void ThreadPool::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    run_task(task);
  }
}

void ThreadPool::run_task(const std::function<void()>& task) noexcept {
  // No exception leaves a task: it is logged and the thread takes the next one. What the
  // task would have produced is lost; callers that wait on it must handle errors as values.
  try {
    task();
  } catch (const std::exception& e) {
    try {
      log::error("{}: a task threw ({}); the pool goes on", name_, e.what());
    } catch (...) {
    }
  } catch (...) {
    try {
      log::error("{}: a task threw; the pool goes on", name_);
    } catch (...) {
    }
  }
}

}  // namespace warmfs
