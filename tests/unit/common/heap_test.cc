#include "common/heap.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace warmfs;

namespace {

// RssAnon of this process, bytes.
uint64_t resident_anonymous_bytes() {
  std::ifstream in("/proc/self/status");
  std::string name;
  uint64_t kib = 0;
  while (in >> name) {
    if (name == "RssAnon:" && in >> kib) return kib * 1024;
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace

TEST_CASE("the heap trimmer trims until it is destroyed, and stops at once", "[heap]") {
  const auto start = std::chrono::steady_clock::now();
  uint64_t done = 0;
  {
    HeapTrimmer trimmer(std::chrono::milliseconds(5));
    const auto deadline = start + std::chrono::seconds(10);
    while (trimmer.trims() < 3 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    done = trimmer.trims();
  }
  CHECK(done >= 3);
  {
    HeapTrimmer idle(std::chrono::hours(1));  // its destructor wakes it, not the hour
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

// The sanitizers replace malloc, so glibc's heap and its figures are not this process's.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST_CASE("heap figures follow allocations, and a trim returns freed pages held in an arena",
          "[heap]") {
  constexpr size_t kBlock = 64 << 10;  // below glibc's mmap threshold: from the arena
  constexpr size_t kBlocks = 1024;     // 64 MiB
  const HeapStats before = heap_stats();
  std::vector<std::unique_ptr<char[]>> blocks;
  for (size_t i = 0; i < kBlocks; ++i) {
    blocks.emplace_back(new char[kBlock]);
    std::fill_n(blocks.back().get(), kBlock, static_cast<char>(i));  // make it resident
  }
  // A block above the others keeps the arena's top from shrinking when they are freed, as
  // live data scattered through a long-running heap does.
  auto pin = std::make_unique<char[]>(kBlock);
  pin[0] = 1;
  const HeapStats full = heap_stats();
  CHECK(full.in_use_bytes >= before.in_use_bytes + kBlocks * kBlock);

  blocks.clear();
  const HeapStats freed = heap_stats();
  CHECK(freed.in_use_bytes + kBlocks * kBlock / 2 < full.in_use_bytes);
  CHECK(freed.free_bytes >= kBlocks * kBlock / 2);

  const uint64_t held = resident_anonymous_bytes();
  {
    HeapTrimmer trimmer(std::chrono::milliseconds(1));
    while (trimmer.trims() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const uint64_t trimmed = resident_anonymous_bytes();
  INFO("RssAnon before the trim " << held << ", after " << trimmed);
  CHECK(trimmed + kBlocks * kBlock / 2 < held);
}
#endif
