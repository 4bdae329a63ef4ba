#include "readahead/read_path.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <latch>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "cache/memory_cache.h"
#include "cache/tiered_cache.h"
#include "common/crc32c.h"
#include "readahead/windowed_reader.h"
#include "support/fault_injecting_store.h"
#include "support/memory_object_store.h"
#include "support/test_data.h"
#include "support/wait.h"

using namespace warmfs;
using namespace std::chrono_literals;
using Op = FaultInjectingStore::Op;
using testing::eventually;

namespace {

constexpr uint64_t kChunk = 4096;

ReadaheadOptions small_options() {
  ReadaheadOptions o;
  o.chunk_size = kChunk;
  o.initial_window_chunks = 2;
  o.max_window_chunks = 16;
  o.max_inflight_bytes = 64 * kChunk;
  o.fetch_threads = 4;
  // One request per chunk, so tests can count requests chunk by chunk; coalescing has its
  // own test.
  o.max_request_bytes = kChunk;
  return o;
}

// An object in an in-memory bucket, seen through a fault-injecting, call-counting store.
struct Setup {
  explicit Setup(uint64_t size, ReadaheadOptions o = small_options(),
                 uint64_t cache_bytes = 1 << 30)
      : cache({.capacity_bytes = cache_bytes}),
        data(random_bytes(size, size)),
        etag(bucket.put_object("obj", data)),
        path(std::make_unique<ReadPath>(store, cache, "test-bucket", o)) {}

  ObjectVersion version() const { return {"obj", etag, data.size()}; }
  std::unique_ptr<Reader> open() { return path->open(version()); }

  // Reads and checks the bytes against the source; returns the count read.
  size_t read_check(Reader& r, uint64_t offset, size_t len) {
    std::vector<std::byte> buf(len);
    Result<size_t> n = r.read(offset, buf);
    REQUIRE(n.is_ok());
    const uint64_t expect =
        offset >= data.size() ? 0 : std::min<uint64_t>(len, data.size() - offset);
    REQUIRE(*n == expect);
    if (expect > 0) REQUIRE(std::memcmp(buf.data(), data.data() + offset, expect) == 0);
    return *n;
  }

  MemoryObjectStore bucket;
  FaultInjectingStore store{bucket};
  MemoryCache cache;
  std::vector<std::byte> data;
  std::string etag;
  std::unique_ptr<ReadPath> path;
};

uint32_t window_of(Reader& r) { return dynamic_cast<WindowedReader&>(r).window_chunks(); }

}  // namespace

TEST_CASE("reads are byte exact at random offsets, across chunks and EOF", "[readahead]") {
  const uint64_t cache_bytes = GENERATE(uint64_t(0), 2 * kChunk, uint64_t(1) << 30);
  Setup s(10 * kChunk + 123, small_options(), cache_bytes);
  auto r = s.open();
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    const uint64_t offset = rng() % (s.data.size() + 100);
    const size_t len = 1 + rng() % (3 * kChunk);
    INFO("offset " << offset << " len " << len);
    s.read_check(*r, offset, len);
  }
  // Edges: exactly at EOF, one before, a read of the whole object, an empty buffer.
  s.read_check(*r, s.data.size(), 10);
  s.read_check(*r, s.data.size() - 1, 10);
  s.read_check(*r, 0, s.data.size() + 5000);
  std::vector<std::byte> none;
  CHECK(*r->read(0, none) == 0);
  CHECK(s.path->counters().fetch_errors == 0);
}

TEST_CASE("an empty object reads as EOF without a request", "[readahead]") {
  Setup s(0);
  auto r = s.open();
  s.read_check(*r, 0, 100);
  CHECK(s.store.call_count(Op::kGetRange) == 0);
}

TEST_CASE("a random reader fetches exactly the chunks it touches", "[readahead]") {
  Setup s(200 * kChunk);
  auto r = s.open();
  // Chunks at least two apart, in no order: never sequential.
  const std::vector<uint64_t> chunks = {50, 3, 120, 77, 9, 190, 30, 150, 100, 60};
  for (uint64_t c : chunks) s.read_check(*r, c * kChunk + 100, 1000);
  // One read that straddles two chunks touches both.
  s.read_check(*r, 170 * kChunk - 10, 20);
  const ReadPathCounters k = s.path->counters();
  CHECK(s.store.call_count(Op::kGetRange) == chunks.size() + 2);
  CHECK(k.fetched_bytes == (chunks.size() + 2) * kChunk);
  CHECK(s.store.bytes_returned() == (chunks.size() + 2) * kChunk);
  CHECK(k.prefetched_chunks == 0);
  CHECK(k.prefetch_wasted_chunks == 0);
  CHECK(window_of(*r) == 0);
  // Reading them again hits the cache.
  for (uint64_t c : chunks) s.read_check(*r, c * kChunk, 10);
  CHECK(s.store.call_count(Op::kGetRange) == chunks.size() + 2);
  CHECK(s.path->counters().cache_hit_bytes == chunks.size() * kChunk);
}

TEST_CASE("a sequential reader's window opens, doubles while it waits, and is capped",
          "[readahead]") {
  ReadaheadOptions o = small_options();
  o.fetch_threads = 1;  // fetches in order, each slower than the reader: it always waits
  Setup s(64 * kChunk, o);
  s.store.set_delay(Op::kGetRange, 5ms);
  auto r = s.open();
  s.read_check(*r, 0, kChunk);
  CHECK(s.store.call_count(Op::kGetRange) == 1);  // first read: no read-ahead yet
  CHECK(window_of(*r) == 0);
  s.read_check(*r, kChunk, kChunk);
  CHECK(window_of(*r) == 2);  // now sequential: the initial window
  CHECK(s.path->counters().prefetched_chunks == 2);
  // Chunks 0 and 1 were demand reads; read-ahead asks for 2, 3, ... in order, so the highest
  // chunk asked for is 1 + prefetched_chunks.
  uint64_t max_lead = 0;
  std::vector<uint32_t> windows;
  for (uint64_t c = 2; c < 64; ++c) {
    s.read_check(*r, c * kChunk, kChunk);
    windows.push_back(window_of(*r));
    const uint64_t highest = 1 + s.path->counters().prefetched_chunks;
    max_lead = std::max(max_lead, highest - c);
  }
  CHECK(windows[0] == 4);
  CHECK(windows[1] == 8);
  CHECK(windows[2] == 16);
  CHECK(*std::max_element(windows.begin(), windows.end()) == 16);
  CHECK(max_lead == 16);
  // Every chunk fetched once: read-ahead never duplicates a request.
  for (uint64_t c = 0; c < 64; ++c) REQUIRE(s.store.get_count("obj", c * kChunk) == 1);
  const ReadPathCounters k = s.path->counters();
  CHECK(k.prefetched_chunks == 62);
  CHECK(k.prefetch_wasted_chunks == 0);
}

TEST_CASE("small reads within chunks count as sequential; a seek resets the window",
          "[readahead]") {
  Setup s(100 * kChunk);
  auto r = s.open();
  for (uint64_t off = 0; off < 3 * kChunk; off += 1000) s.read_check(*r, off, 1000);
  CHECK(window_of(*r) >= 2);
  s.read_check(*r, 60 * kChunk, 100);  // seek
  CHECK(window_of(*r) == 0);
  s.read_check(*r, 60 * kChunk + 100, 100);
  CHECK(window_of(*r) == 2);
}

TEST_CASE("read-ahead holds its chunks even when the cache cannot", "[readahead]") {
  // One chunk of cache: prefetched chunks would be evicted before being read.
  Setup s(64 * kChunk, small_options(), kChunk);
  s.store.set_delay(Op::kGetRange, 1ms);
  auto r = s.open();
  for (uint64_t c = 0; c < 64; ++c) s.read_check(*r, c * kChunk, kChunk);
  CHECK(s.store.call_count(Op::kGetRange) == 64);
  CHECK(s.path->counters().prefetched_chunks > 0);
}

TEST_CASE("read-ahead coalesces consecutive chunks into one request", "[readahead]") {
  ReadaheadOptions o = small_options();
  o.max_request_bytes = 4 * kChunk;
  o.initial_window_chunks = 8;
  Setup s(64 * kChunk + 123, o);
  auto r = s.open();
  for (uint64_t off = 0; off < 64 * kChunk + 123; off += kChunk / 2)
    s.read_check(*r, off, kChunk / 2);
  const size_t gets = s.store.call_count(Op::kGetRange);
  // Two demand reads, then runs of at most four chunks: far fewer requests than chunks, and
  // every byte fetched exactly once.
  CHECK(gets < 30);
  CHECK(s.store.bytes_returned() == 64 * kChunk + 123);
  for (const auto& c : s.store.calls()) CHECK(c.length <= 4 * kChunk);
  CHECK(s.path->counters().prefetch_wasted_chunks == 0);
}

namespace {
// Brings a range in two steps: the first half (reported as landed), then, once the test
// opens the gate (or 5 s after the store was made), the rest.
class HalfThenWaitStore final : public MemoryObjectStore {
 public:
  using MemoryObjectStore::MemoryObjectStore;
  Result<size_t> get_range_progress(std::string_view key, uint64_t offset, std::span<std::byte> out,
                                    std::string_view if_match,
                                    const std::function<void(size_t)>& progress,
                                    const RangeBytesSeen&) override {
    Result<size_t> r = get_range(key, offset, out, if_match);
    if (!r.is_ok()) return r;
    progress(*r / 2);
    gate_.wait();
    progress(*r);
    return r;
  }
  testing::Gate& gate() { return gate_; }

 private:
  testing::Gate gate_{5s};
};
}  // namespace

TEST_CASE("chunks of a request are served as their bytes land, before the request ends",
          "[readahead]") {
  ReadaheadOptions o = small_options();
  o.max_request_bytes = 8 * kChunk;
  HalfThenWaitStore bucket;
  MemoryCache cache({.capacity_bytes = 1 << 30});
  const std::vector<std::byte> data = random_bytes(8 * kChunk, 5);
  const std::string etag = bucket.put_object("obj", data);
  ReadPath path(bucket, cache, "test-bucket", o);
  const ObjectVersion v{"obj", etag, data.size()};
  path.warm(v, 8 * kChunk);  // one request for all eight chunks; it stalls half way
  // Should the first half wait for the whole request, the gate opens by itself after 5 s and
  // the check below fails rather than the test hanging.
  auto r = path.open(v);
  testing::OpenOnExit release(bucket.gate());
  std::vector<std::byte> buf(kChunk);
  for (uint64_t i = 0; i < 4; ++i) {  // the first half is readable while the request hangs
    auto n = r->read(i * kChunk, buf);
    REQUIRE(n.is_ok());
    CHECK(std::memcmp(buf.data(), data.data() + i * kChunk, kChunk) == 0);
  }
  CHECK_FALSE(bucket.gate().is_open());
  CHECK(path.counters().fetch_requests == 1);
  bucket.gate().open();
  for (uint64_t i = 4; i < 8; ++i) {
    auto n = r->read(i * kChunk, buf);
    REQUIRE(n.is_ok());
    CHECK(std::memcmp(buf.data(), data.data() + i * kChunk, kChunk) == 0);
  }
  CHECK(path.counters().fetch_requests == 1);
  CHECK(path.counters().fetched_bytes == 8 * kChunk);
}

TEST_CASE("streams sharing a spent budget still fetch in whole requests", "[readahead]") {
  ReadaheadOptions o = small_options();
  o.max_request_bytes = 4 * kChunk;
  o.initial_window_chunks = 8;
  o.max_window_chunks = 16;
  o.max_inflight_bytes = 16 * kChunk;  // less than the four windows together
  Setup s(64 * kChunk, o);
  std::vector<std::unique_ptr<Reader>> readers;
  for (int i = 0; i < 4; ++i) readers.push_back(s.open());
  // Four sequential readers of one object, in turn, a chunk at a time: each read gives one
  // chunk of budget back.
  for (uint64_t off = 0; off < 64 * kChunk; off += kChunk) {
    for (auto& r : readers) s.read_check(*r, off, kChunk);
  }
  size_t prefetch_gets = 0, one_chunk_gets = 0;
  for (const auto& c : s.store.calls()) {
    if (c.op != Op::kGetRange) continue;
    ++prefetch_gets;
    if (c.length <= kChunk) ++one_chunk_gets;
  }
  // The first reads are a chunk each (the window opens), and the object's last run may be
  // short; the rest are whole runs. Taking the budget back a chunk at a time made nearly all
  // requests one chunk, and readers trailing one another cut runs to the chunks the leader
  // had not reached yet.
  INFO("range GETs " << prefetch_gets << ", of one chunk " << one_chunk_gets);
  CHECK(one_chunk_gets * 4 < prefetch_gets);
  CHECK(prefetch_gets <= 24);
  CHECK(s.store.bytes_returned() == 64 * kChunk);  // readers share fetches: each chunk once
}

TEST_CASE("each open stream's window is held to its share of the budget", "[readahead]") {
  ReadaheadOptions o = small_options();
  o.fetch_threads = 32;  // every chunk asked for is in flight at once (and counted)
  o.max_window_chunks = 16;
  o.max_inflight_bytes = 16 * kChunk;  // alone a stream may take it all; two get 8 each
  Setup s(128 * kChunk, o);
  s.store.set_delay(Op::kGetRange, 2ms);
  const std::vector<std::byte> other = random_bytes(16 * kChunk, 7);
  const ObjectVersion other_version{"other", s.bucket.put_object("other", other), other.size()};
  // The highest chunk of "obj" asked for so far.
  auto highest = [&] {
    for (uint64_t j = 128; j-- > 0;) {
      if (s.store.get_count("obj", j * kChunk) > 0) return j;
    }
    return uint64_t{0};
  };
  auto a = s.open();
  for (uint64_t c = 0; c < 30; ++c) s.read_check(*a, c * kChunk, kChunk);
  CHECK(window_of(*a) == 16);
  // Alone: further ahead than a half share (the read-ahead's GETs start on the fetch threads,
  // which a loaded machine may run a little after the read returned).
  CHECK(eventually([&] { return highest() > 29 + 8; }));

  // A second stream opens: the first one's read-ahead stays within its share from now on.
  auto b = s.path->open(other_version);
  std::vector<std::byte> buf(kChunk);
  for (uint64_t c = 0; c < 3; ++c) REQUIRE(b->read(c * kChunk, buf).is_ok());
  CHECK(window_of(*b) > 0);
  uint64_t lead = 0;
  for (uint64_t c = 30; c < 80; ++c) {
    s.read_check(*a, c * kChunk, kChunk);
    if (c >= 50) lead = std::max(lead, highest() - c);
  }
  CHECK(lead <= 8);

  // It closes: the first stream may use the whole budget again.
  b.reset();
  for (uint64_t c = 80; c < 110; ++c) s.read_check(*a, c * kChunk, kChunk);
  CHECK(eventually([&] { return highest() > 109 + 8; }));
}

namespace {
// Shows a range's bytes to `seen` in pieces of odd sizes, as S3 does while they land: with
// repeats (a retry asks for bytes again) or with a piece left out (a store may stop showing).
class ShowingStore final : public MemoryObjectStore {
 public:
  enum class Mode { kPieces, kRepeats, kGap };
  explicit ShowingStore(Mode mode) : mode_(mode) {}
  Result<size_t> get_range_progress(std::string_view key, uint64_t offset, std::span<std::byte> out,
                                    std::string_view if_match,
                                    const std::function<void(size_t)>& progress,
                                    const RangeBytesSeen& seen) override {
    Result<size_t> r = get_range(key, offset, out, if_match);
    if (!r.is_ok()) return r;
    const size_t piece = 1000;  // does not divide the chunk size: pieces straddle chunks
    size_t i = 0;
    for (size_t at = 0; at < *r; at += piece, ++i) {
      const size_t n = std::min(piece, *r - at);
      if (mode_ == Mode::kGap && i == 5) continue;
      if (mode_ == Mode::kRepeats && at >= 700) {
        seen(at - 700, std::span<const std::byte>(out.data() + at - 700, 700));
      }
      seen(at, std::span<const std::byte>(out.data() + at, n));
      if (progress) progress(at + n);
    }
    if (progress) progress(*r);
    return r;
  }

 private:
  Mode mode_;
};
}  // namespace

TEST_CASE("chunks take the CRC32C computed as their bytes are shown, and it is right",
          "[readahead]") {
  const auto mode =
      GENERATE(ShowingStore::Mode::kPieces, ShowingStore::Mode::kRepeats, ShowingStore::Mode::kGap);
  // Chunks of one checksum block, and of several with a short last one.
  const uint64_t chunk = GENERATE(uint64_t{kChunk}, uint64_t{40000});
  ReadaheadOptions o = small_options();
  o.chunk_size = chunk;
  o.max_request_bytes = 8 * chunk;
  o.initial_window_chunks = 8;
  ShowingStore bucket(mode);
  const std::vector<std::byte> data = random_bytes(20 * chunk + 777, 5);  // a short last chunk
  const ObjectVersion v{"obj", bucket.put_object("obj", data), data.size()};
  MemoryCache cache({.capacity_bytes = 1 << 30});
  ReadPath path(bucket, cache, "test-bucket", o);
  auto r = path.open(v);
  std::vector<ChunkSlice> slices;
  for (uint64_t off = 0; off < data.size(); off += chunk) {
    REQUIRE(r->read_slices(off, chunk, slices).is_ok());
    REQUIRE(slices.size() == 1);
    const Chunk& c = *slices[0].chunk;
    INFO("chunk at " << off << ", mode " << int(mode));
    REQUIRE(c.bytes.size() == std::min<uint64_t>(chunk, data.size() - off));
    CHECK(std::memcmp(c.bytes.data(), data.data() + off, c.bytes.size()) == 0);
    CHECK(c.crc32c == crc32c(std::span<const std::byte>(data.data() + off, c.bytes.size())));
    const auto from = data.begin() + static_cast<ptrdiff_t>(off);
    ChunkPtr want =
        make_chunk(std::vector<std::byte>(from, from + static_cast<ptrdiff_t>(c.bytes.size())));
    CHECK(c.block_crcs == want->block_crcs);
  }
}

TEST_CASE("a failed coalesced request fails each of its chunks, which are fetched again",
          "[readahead]") {
  ReadaheadOptions o = small_options();
  o.max_request_bytes = 8 * kChunk;
  o.initial_window_chunks = 8;
  Setup s(32 * kChunk, o);
  auto r = s.open();
  s.read_check(*r, 0, 100);
  s.store.fail_next(Op::kGetRange, 1, Status(Errc::kIo, "injected"));
  s.read_check(*r, 100, 100);  // opens the window: one run of chunks 1..8, which fails
  CHECK(eventually([&] { return s.path->counters().fetch_errors >= 1; }));
  for (uint64_t off = 200; off < 32 * kChunk; off += kChunk / 3) s.read_check(*r, off, kChunk / 3);
}

TEST_CASE("concurrent misses on one chunk make one request", "[readahead]") {
  const bool shared_handle = GENERATE(false, true);
  Setup s(8 * kChunk);
  s.store.set_delay(Op::kGetRange, 100ms);
  auto shared = s.open();
  std::latch start(16);
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&] {
      auto own = s.open();
      Reader& r = shared_handle ? *shared : *own;
      std::vector<std::byte> buf(100);
      start.arrive_and_wait();
      Result<size_t> n = r.read(1000, buf);
      if (!n.is_ok() || *n != 100 || std::memcmp(buf.data(), s.data.data() + 1000, 100) != 0) bad++;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(bad.load() == 0);
  CHECK(s.store.get_count("obj", 0) == 1);
}

TEST_CASE("concurrent reads on one handle are byte exact", "[readahead]") {
  Setup s(40 * kChunk + 7, small_options(), 8 * kChunk);
  s.store.set_delay(Op::kGetRange, 200us);
  auto r = s.open();
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      uint64_t offset = 0;
      for (int i = 0; i < 200; ++i) {
        // Half the threads stream, half jump around.
        offset = (t % 2 == 0) ? (offset + 3000) % s.data.size() : rng() % s.data.size();
        const size_t len = 1 + rng() % (2 * kChunk);
        std::vector<std::byte> buf(len);
        Result<size_t> n = r->read(offset, buf);
        const uint64_t expect = std::min<uint64_t>(len, s.data.size() - offset);
        if (!n.is_ok() || *n != expect ||
            std::memcmp(buf.data(), s.data.data() + offset, expect) != 0) {
          bad++;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(bad.load() == 0);
  r.reset();
  CHECK(s.path->counters().inflight_bytes == 0);
}

TEST_CASE("a reader of a replaced object fails with kPreconditionFailed", "[readahead]") {
  Setup s(10 * kChunk);
  auto old_reader = s.open();
  s.read_check(*old_reader, 0, 100);  // chunk 0 of the old version is cached
  const auto new_data = random_bytes(10 * kChunk, 999);
  const std::string new_etag = s.bucket.put_object("obj", new_data);
  REQUIRE(new_etag != s.etag);
  std::vector<std::byte> buf(100);
  Result<size_t> n = old_reader->read(5 * kChunk, buf);
  CHECK(n.code() == Errc::kPreconditionFailed);
  // The old version's cached chunk is still its own bytes, never the new version's.
  s.read_check(*old_reader, 0, 100);
  // A reader of the new version sees the new bytes.
  auto new_reader = s.path->open({"obj", new_etag, new_data.size()});
  REQUIRE(*new_reader->read(5 * kChunk, buf) == 100);
  CHECK(std::memcmp(buf.data(), new_data.data() + 5 * kChunk, 100) == 0);
  REQUIRE(*new_reader->read(0, buf) == 100);
  CHECK(std::memcmp(buf.data(), new_data.data(), 100) == 0);
}

TEST_CASE("a failed fetch fails the read, is not cached, and the next read recovers",
          "[readahead]") {
  Setup s(10 * kChunk);
  std::vector<std::byte> buf(100);
  // A fresh reader for each read: no read-ahead, so every request below is the read's own.
  auto read_at = [&](uint64_t offset) { return s.open()->read(offset, buf); };
  auto check_at = [&](uint64_t offset) {
    auto r = s.open();
    s.read_check(*r, offset, 100);
  };
  s.store.fail_next(Op::kGetRange, 1, Status(Errc::kIo, "injected"));
  CHECK(read_at(3 * kChunk).code() == Errc::kIo);
  check_at(3 * kChunk);
  CHECK(s.store.get_count("obj", 3 * kChunk) == 2);
  CHECK(s.path->counters().fetch_errors == 1);
  // A store that returns a short body (a bug below us) is an error, not short data.
  s.store.truncate_next(1, 10);
  CHECK(read_at(7 * kChunk).code() == Errc::kIo);
  check_at(7 * kChunk);
  // A store that is down stays an error until it is back.
  s.store.fail_always(Op::kGetRange, Status(Errc::kUnavailable, "down"));
  CHECK(read_at(8 * kChunk).code() == Errc::kUnavailable);
  CHECK(read_at(8 * kChunk).code() == Errc::kUnavailable);
  s.store.clear_faults();
  check_at(8 * kChunk);
  CHECK(s.cache.counters().inserted_bytes == 3 * kChunk);  // failures never reached it
}

TEST_CASE("a read stopped by an error leaves no stale failure behind", "[readahead]") {
  Setup s(10 * kChunk);
  auto r = s.open();
  // A read over chunks 2 and 3 whose two fetches both fail: the read reports the first.
  s.store.fail_next(Op::kGetRange, 2, Status(Errc::kIo, "injected"));
  std::vector<std::byte> buf(2 * kChunk);
  CHECK(r->read(2 * kChunk + 10, buf).code() == Errc::kIo);
  // The fetches the read left behind still run; wait until both failures have acted (a fetch
  // still queued when the store is idle would otherwise take the second one later, from the
  // read below that joins it).
  CHECK(eventually([&] { return s.store.injected_count() == 2 && s.store.in_flight() == 0; }));
  // Chunk 3's failed fetch was never waited for; reading it now fetches it again.
  s.read_check(*r, 3 * kChunk + 10, 100);
  s.read_check(*r, 2 * kChunk, 100);
}

TEST_CASE("a failed prefetch is retried by the read that needs it", "[readahead]") {
  Setup s(20 * kChunk);
  auto r = s.open();
  s.read_check(*r, 0, 100);  // chunk 0, no read-ahead yet
  // The next read is sequential and served from chunk 0; its prefetches (1, 2) all fail.
  s.store.fail_next(Op::kGetRange, 2, Status(Errc::kIo, "injected"));
  s.read_check(*r, 100, 100);
  // Let the failures land, then read on into the failed chunks.
  REQUIRE(eventually([&] { return s.path->counters().fetch_errors >= 2; }));
  REQUIRE(s.path->counters().fetch_errors == 2);
  for (uint64_t off = 200; off < 3 * kChunk; off += 500) s.read_check(*r, off, 500);
  CHECK(s.store.get_count("obj", 1 * kChunk) == 2);
  CHECK(s.store.get_count("obj", 2 * kChunk) == 2);
}

namespace {
// A slower tier whose puts wait at a gate, as an SSD tier's put waits for room in a full
// write queue. Counts the bytes of puts waiting.
class GatedCache final : public BlockCache {
 public:
  ChunkPtr get(const ChunkKey&) override { return nullptr; }
  void put(const ChunkKey&, ChunkPtr chunk) override {
    {
      std::lock_guard lock(mu_);
      waiting_ += chunk->bytes.size();
      peak_ = std::max(peak_, waiting_);
    }
    gate_.wait();
    std::lock_guard lock(mu_);
    waiting_ -= chunk->bytes.size();
  }
  BlockCacheCounters counters() const override { return {}; }
  // Shut until the test opens it, or 10 s after the cache was made.
  testing::Gate& gate() { return gate_; }
  uint64_t peak() {
    std::lock_guard lock(mu_);
    return peak_;
  }
  uint64_t waiting() {
    std::lock_guard lock(mu_);
    return waiting_;
  }

 private:
  testing::Gate gate_;
  std::mutex mu_;  // protects waiting_ and peak_
  uint64_t waiting_ = 0;
  uint64_t peak_ = 0;
};
}  // namespace

TEST_CASE("chunks waiting for a slow SSD tier hold read-ahead back beyond the allowance",
          "[readahead]") {
  ReadaheadOptions o = small_options();
  o.fetch_threads = 128;  // more threads than chunks the test reads: none runs short
  o.initial_window_chunks = 8;
  o.max_window_chunks = 16;
  o.max_inflight_bytes = 16 * kChunk;
  o.handoff_allowance_bytes = 8 * kChunk;
  MemoryObjectStore bucket;
  FaultInjectingStore store{bucket};
  const std::vector<std::byte> data = random_bytes(128 * kChunk, 11);
  const ObjectVersion v{"obj", bucket.put_object("obj", data), data.size()};
  MemoryCache memory({.capacity_bytes = 1 << 30});
  GatedCache disk;
  TieredCache tiers(memory, disk);
  store.set_delay(Op::kGetRange, 1ms);
  ReadPath path(store, tiers, "test-bucket", o, &memory);
  auto r = path.open(v);
  // However the test ends, the fetch threads waiting at the disk's gate go on before the read
  // path joins them. Should the read path wait for the disk where it must not, the gate opens
  // by itself after 10 s and the test fails on it instead of hanging.
  testing::OpenOnExit release(disk.gate());
  std::vector<std::byte> buf(kChunk);
  auto read_to = [&](uint64_t from, uint64_t to) {
    for (uint64_t c = from; c < to; ++c) {
      REQUIRE(r->read(c * kChunk, buf).is_ok());
      REQUIRE(std::memcmp(buf.data(), data.data() + c * kChunk, kChunk) == 0);
    }
    // Every fetch the reads started has ended (its chunk waits at the gate): the count of
    // chunks fetched is final.
    REQUIRE(eventually([&] { return path.counters().chunks_in_flight == 0; }));
  };
  // The disk takes nothing: every chunk fetched stays in a fetch thread, waiting. Demand
  // reads go on (they are never refused); read-ahead stops once the chunks waiting pass the
  // allowance and use up the budget. Unchecked, it stayed a window (16 chunks) ahead.
  read_to(0, 64);
  REQUIRE_FALSE(disk.gate().is_open());  // the reads did not wait for the disk
  // A fetch leaves the in-flight count before it hands its chunks to the disk: wait until
  // every chunk fetched is at the gate.
  CHECK(eventually([&] { return disk.waiting() >= store.bytes_returned(); }));
  const uint64_t ahead = store.bytes_returned() / kChunk - 64;
  INFO("chunks fetched ahead of the reader while the disk took nothing: " << ahead);
  CHECK(ahead <= 2);
  CHECK(path.counters().inflight_bytes > 0);  // the excess shows as budget in use
  // The disk takes them: read-ahead runs ahead again.
  disk.gate().open();
  // The chunks that waited are taken (the budget they held is free again).
  REQUIRE(eventually([&] { return disk.waiting() == 0; }));
  read_to(64, 80);
  CHECK(store.bytes_returned() / kChunk > 80 + 4);
  CHECK(disk.peak() >= 64 * kChunk);
}

TEST_CASE("all readers together stay within the read-ahead budget", "[readahead]") {
  ReadaheadOptions o = small_options();
  o.max_inflight_bytes = 5 * kChunk;
  o.initial_window_chunks = 4;
  o.fetch_threads = 8;
  Setup s(1, o);
  std::vector<std::vector<std::byte>> objects;
  std::vector<ObjectVersion> versions;
  for (int i = 0; i < 4; ++i) {
    objects.push_back(random_bytes(48 * kChunk, 100 + i));
    const std::string key = "obj" + std::to_string(i);
    versions.push_back({key, s.bucket.put_object(key, objects.back()), objects.back().size()});
  }
  s.store.set_delay(Op::kGetRange, 1ms);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> peak{0};
  std::thread watcher([&] {
    while (!stop.load()) {
      peak.store(std::max(peak.load(), s.path->counters().inflight_bytes));
      std::this_thread::yield();
    }
  });
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&, i] {
      auto r = s.path->open(versions[i]);
      std::vector<std::byte> buf(kChunk);
      for (uint64_t off = 0; off < objects[i].size(); off += kChunk) {
        Result<size_t> n = r->read(off, buf);
        if (!n.is_ok() || *n != kChunk ||
            std::memcmp(buf.data(), objects[i].data() + off, kChunk) != 0)
          bad++;
      }
    });
  }
  for (auto& t : readers) t.join();
  stop = true;
  watcher.join();
  CHECK(bad.load() == 0);
  CHECK(peak.load() <= o.max_inflight_bytes);
  CHECK(peak.load() > 0);
  const ReadPathCounters k = s.path->counters();
  CHECK(k.prefetched_chunks > 0);
  CHECK(k.inflight_bytes == 0);  // every reader is closed
  // Demand reads went ahead regardless: every chunk arrived exactly once or more.
  CHECK(k.fetched_bytes >= 4 * 48 * kChunk);
}

TEST_CASE("destroying readers and the read path with fetches pending is safe", "[readahead]") {
  Setup s(100 * kChunk);
  s.store.set_delay(Op::kGetRange, 5ms);
  for (int round = 0; round < 5; ++round) {
    auto r = s.open();
    s.read_check(*r, 0, 100);
    s.read_check(*r, 100, 100);  // opens the window: prefetches now in flight
    r.reset();
    CHECK(s.path->counters().inflight_bytes == 0);
  }
  CHECK(s.path->counters().prefetch_wasted_chunks > 0);
  // Reader outlives its ReadPath; the path's destructor cancels what is still queued.
  auto survivor = s.open();
  std::vector<std::byte> buf(100);
  REQUIRE(survivor->read(50 * kChunk, buf).is_ok());
  REQUIRE(survivor->read(50 * kChunk + 100, buf).is_ok());
  s.path.reset();
  survivor.reset();
}

TEST_CASE("a version without an ETag is read without If-Match and not cached", "[readahead]") {
  Setup s(4 * kChunk);
  auto r = s.path->open({"obj", "", s.data.size()});
  s.read_check(*r, 10, 100);
  s.read_check(*r, 3 * kChunk, 100);
  CHECK(s.cache.used_bytes() == 0);
}
