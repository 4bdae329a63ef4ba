#include "common/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

using warmfs::ThreadPool;

TEST_CASE("thread pool runs every task, shutdown drains and joins", "[common]") {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(4);
    CHECK(pool.size() == 4);
    for (int i = 0; i < 1000; ++i) REQUIRE(pool.submit([&] { ran.fetch_add(1); }));
    pool.shutdown();
    CHECK(ran.load() == 1000);
    CHECK_FALSE(pool.submit([&] { ran.fetch_add(1); }));
    pool.shutdown();  // idempotent
  }
  CHECK(ran.load() == 1000);
}

TEST_CASE("thread pool runs tasks concurrently", "[common]") {
  // Each task waits (with a deadline) until four run at once: a pool that ran them one at a
  // time, or on fewer threads, would reach the deadline with a lower peak.
  ThreadPool pool(4);
  std::mutex mu;
  std::condition_variable cv;
  int running = 0, peak = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int i = 0; i < 8; ++i) {
    pool.submit([&] {
      std::unique_lock lock(mu);
      peak = std::max(peak, ++running);
      cv.notify_all();
      cv.wait_until(lock, deadline, [&] { return peak >= 4; });
      --running;
    });
  }
  pool.shutdown();
  CHECK(peak == 4);  // all four threads at once, never more
}

TEST_CASE("thread pool: a task that throws is logged and the pool goes on", "[common]") {
  std::atomic<int> ran{0};
  ThreadPool pool(1);
  pool.submit([] { throw std::runtime_error("task failed"); });
  pool.submit([] { throw 7; });
  for (int i = 0; i < 3; ++i) pool.submit([&] { ran.fetch_add(1); });
  pool.shutdown();
  CHECK(ran.load() == 3);
}

TEST_CASE("thread pool tasks may submit more tasks", "[common]") {
  std::atomic<int> parents{0}, children{0};
  ThreadPool pool(2);
  for (int i = 0; i < 10; ++i) {
    pool.submit([&] {
      pool.submit([&] { children.fetch_add(1); });
      parents.fetch_add(1);
    });
  }
  // Each parent queues its child before counting itself; shutdown runs what is queued.
  while (parents.load() < 10) std::this_thread::yield();
  pool.shutdown();
  CHECK(children.load() == 10);
}
