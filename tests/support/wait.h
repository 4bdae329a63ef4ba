// Waiting in tests, always with a deadline: a test of broken code fails within seconds
// instead of hanging the run.
//
// - eventually(cond) polls for an observable event (a counter, a state) up to a limit.
// - Gate holds threads of the code under test (a slow disk, a stalled request) until the test
//   opens it. A gate also opens by itself at its deadline and remembers that it did
//   (gave_up()), so code that wrongly waits for a gated step still returns and the test fails
//   on gave_up() rather than hanging. OpenOnExit opens a gate when the test leaves its scope,
//   early on a failed REQUIRE included, so that destructors joining the gated threads finish.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace warmfs::testing {

// How long a test waits for something that takes milliseconds when the code works.
inline constexpr std::chrono::seconds kWaitLimit{10};

// Polls cond every millisecond until it holds (true) or limit has passed (false).
inline bool eventually(const std::function<bool()>& cond,
                       std::chrono::milliseconds limit = kWaitLimit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Thread safe. Shut when made; opens when the test calls open(), or by itself `limit` after it
// was made.
class Gate {
 public:
  explicit Gate(std::chrono::milliseconds limit = kWaitLimit)
      : deadline_(std::chrono::steady_clock::now() + limit) {}
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // Blocks until the gate opens; false if it opened at its deadline rather than by open().
  bool wait() {
    std::unique_lock lock(mu_);
    if (!cv_.wait_until(lock, deadline_, [this] { return open_; })) {
      gave_up_ = true;
      open_ = true;
      cv_.notify_all();
      return false;
    }
    return !gave_up_;
  }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Opened, by open() or at the deadline.
  bool is_open() const {
    std::lock_guard lock(mu_);
    return open_;
  }
  // A wait reached the deadline: something waited at the gate far longer than the test meant.
  bool gave_up() const {
    std::lock_guard lock(mu_);
    return gave_up_;
  }

 private:
  const std::chrono::steady_clock::time_point deadline_;
  mutable std::mutex mu_;  // protects open_ and gave_up_
  std::condition_variable cv_;
  bool open_ = false;
  bool gave_up_ = false;
};

// Opens a gate when it goes out of scope. Declare it after the objects whose destructors wait
// for the gated threads (a read path, a cache), so it runs before them.
class OpenOnExit {
 public:
  explicit OpenOnExit(Gate& gate) : gate_(gate) {}
  ~OpenOnExit() { gate_.open(); }
  OpenOnExit(const OpenOnExit&) = delete;
  OpenOnExit& operator=(const OpenOnExit&) = delete;

 private:
  Gate& gate_;
};

}  // namespace warmfs::testing
