#include "common/thread_pool.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
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
  ThreadPool pool(4);
  std::atomic<int> running{0}, peak{0};
  for (int i = 0; i < 8; ++i) {
    pool.submit([&] {
      const int now = running.fetch_add(1) + 1;
      int p = peak.load();
      while (now > p && !peak.compare_exchange_weak(p, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      running.fetch_sub(1);
    });
  }
  pool.shutdown();
  CHECK(peak.load() >= 2);
  CHECK(peak.load() <= 4);
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
