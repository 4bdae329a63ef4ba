#include "readahead/request_sizer.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>

using namespace warmfs;
using namespace std::chrono_literals;
using State = RequestSizer::State;

namespace {

constexpr uint64_t kChunk = 1 << 20;
constexpr uint32_t kWindow = 256;

// A stream against a modelled origin, on a fake clock: requests of the sizer's size complete
// one after another at the aggregate throughput origin(size) bytes/s (the stream keeps its
// window full), each reported with the generation it was issued in.
struct Stream {
  RequestSizer sizer;
  std::function<double(uint32_t size)> origin;
  RequestSizer::Clock::time_point now{};
  uint32_t window = kWindow;

  Stream(RequestSizer::Options o, std::function<double(uint32_t)> f)
      : sizer(o), origin(std::move(f)) {}

  // Runs until the sizer holds a size, or `limit` requests have completed; returns how many did.
  int run(int limit = 10000) {
    int n = 0;
    for (; n < limit && sizer.state() != State::kHold; ++n) {
      const uint32_t size = sizer.request_chunks(window);
      const uint64_t gen = sizer.generation();
      const uint64_t bytes = size * kChunk;
      now += std::chrono::duration_cast<RequestSizer::Clock::duration>(
          std::chrono::duration<double>(static_cast<double>(bytes) / origin(size)));
      sizer.completed(gen, bytes, now);
    }
    return n;
  }
};

RequestSizer::Options options() {
  RequestSizer::Options o;
  o.initial_chunks = 16;
  o.min_chunks = 4;
  o.max_chunks = 64;
  o.samples = 4;
  o.gain = 1.2;
  o.min_span = 50ms;
  return o;
}

double mbps(double v) { return v * 1e6; }

}  // namespace

TEST_CASE("request sizer: a per-connection cap makes it halve the size while throughput rises",
          "[readahead][request_sizer]") {
  // 50 MB/s per request in flight (window / size of them), 1,500 MB/s in all.
  Stream s(options(),
           [](uint32_t size) { return std::min(mbps(50) * (kWindow / size), mbps(1500)); });
  s.run();
  REQUIRE(s.sizer.state() == State::kHold);
  // 16 (800 MB/s) -> 8 (1,500) kept -> 4 (1,500, no gain) -> back to 8.
  CHECK(s.sizer.size_chunks() == 8);
  CHECK(s.sizer.best_rate() == Approx(mbps(1500)).epsilon(0.01));
}

TEST_CASE("request sizer: goes down to the smallest size while each step gains",
          "[readahead][request_sizer]") {
  Stream s(options(), [](uint32_t size) { return mbps(50) * (kWindow / size); });
  s.run();
  REQUIRE(s.sizer.state() == State::kHold);
  CHECK(s.sizer.size_chunks() == 4);
  CHECK(s.sizer.request_chunks(kWindow) == 4);
}

TEST_CASE("request sizer: an origin that favours large requests makes it double the size",
          "[readahead][request_sizer]") {
  const std::map<uint32_t, double> rate = {
      {4, mbps(100)}, {8, mbps(150)}, {16, mbps(200)}, {32, mbps(300)}, {64, mbps(330)}};
  Stream s(options(), [&](uint32_t size) { return rate.at(size); });
  s.run();
  REQUIRE(s.sizer.state() == State::kHold);
  // 16 (200) -> 8 (150, no gain) -> 32 (300) kept -> 64 (330, under 1.2x) -> back to 32.
  CHECK(s.sizer.size_chunks() == 32);
}

TEST_CASE("request sizer: a flat origin keeps the first size", "[readahead][request_sizer]") {
  Stream s(options(), [](uint32_t) { return mbps(400); });
  s.run();
  REQUIRE(s.sizer.state() == State::kHold);
  CHECK(s.sizer.size_chunks() == 16);
  // Held: further completions change nothing.
  const uint64_t gen = s.sizer.generation();
  for (int i = 0; i < 100; ++i) {
    s.now += 10ms;
    s.sizer.completed(gen, 16 * kChunk, s.now);
  }
  CHECK(s.sizer.size_chunks() == 16);
  CHECK(s.sizer.generation() == gen);
}

TEST_CASE("request sizer: the size is held to half the window", "[readahead][request_sizer]") {
  RequestSizer sizer(options());
  CHECK(sizer.request_chunks(256) == 16);
  CHECK(sizer.request_chunks(8) == 4);
  CHECK(sizer.request_chunks(1) == 1);
  CHECK(sizer.request_chunks(64) == 16);
}

TEST_CASE("request sizer: a verdict needs a round of requests spread over time",
          "[readahead][request_sizer]") {
  RequestSizer sizer(options());
  REQUIRE(sizer.request_chunks(kWindow) == 16);  // 16 requests in flight
  const uint64_t gen = sizer.generation();
  RequestSizer::Clock::time_point now{};
  // A burst: many completions at one instant make no rate.
  for (int i = 0; i < 40; ++i) sizer.completed(gen, 16 * kChunk, now);
  CHECK(sizer.state() == State::kBaseline);
  CHECK(sizer.generation() == gen);
  // Spread out, but fewer than one round (16) after the first: no verdict yet.
  RequestSizer fresh(options());
  REQUIRE(fresh.request_chunks(kWindow) == 16);
  const uint64_t g = fresh.generation();
  for (int i = 0; i < 16; ++i) {
    now += 20ms;
    fresh.completed(g, 16 * kChunk, now);
  }
  CHECK(fresh.state() == State::kBaseline);
  now += 20ms;
  fresh.completed(g, 16 * kChunk, now);  // the 16th after the first
  CHECK(fresh.state() == State::kProbeDown);
  CHECK(fresh.request_chunks(kWindow) == 8);
  CHECK(fresh.best_rate() == Approx(16.0 * kChunk / 0.020).epsilon(0.01));
}

TEST_CASE("request sizer: a new window or an old generation does not mix into a measurement",
          "[readahead][request_sizer]") {
  RequestSizer sizer(options());
  REQUIRE(sizer.request_chunks(32) == 16);  // two in flight: a verdict after 4 + 1
  const uint64_t old_gen = sizer.generation();
  RequestSizer::Clock::time_point now{};
  for (int i = 0; i < 3; ++i) {
    now += 100ms;
    sizer.completed(old_gen, 16 * kChunk, now);
  }
  // The window grows: the measurement starts again, and completions of requests issued
  // before do not count.
  REQUIRE(sizer.request_chunks(64) == 16);
  const uint64_t gen = sizer.generation();
  CHECK(gen != old_gen);
  for (int i = 0; i < 10; ++i) {
    now += 100ms;
    sizer.completed(old_gen, 16 * kChunk, now);
  }
  CHECK(sizer.state() == State::kBaseline);
  for (int i = 0; i < 4; ++i) {
    now += 100ms;
    sizer.completed(gen, 16 * kChunk, now);
  }
  CHECK(sizer.state() == State::kBaseline);  // the first starts the clock: 3 after it
  now += 100ms;
  sizer.completed(gen, 16 * kChunk, now);
  CHECK(sizer.state() == State::kProbeDown);
  CHECK(sizer.best_rate() == Approx(16.0 * kChunk / 0.1).epsilon(0.01));
}
