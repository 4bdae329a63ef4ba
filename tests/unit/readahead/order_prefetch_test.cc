#include "readahead/order_prefetch.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "cache/memory_cache.h"
#include "readahead/read_path.h"
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

ReadaheadOptions options(uint64_t budget_chunks = 1024) {
  ReadaheadOptions o;
  o.chunk_size = kChunk;
  o.initial_window_chunks = 2;
  o.max_window_chunks = 16;
  o.max_inflight_bytes = budget_chunks * kChunk;
  o.fetch_threads = 8;
  o.max_request_bytes = 64 * kChunk;
  return o;
}

// `count` objects "d/fNNNN" of `size` bytes in an in-memory bucket with a fake first-byte
// latency, a read path over a memory cache, and an order prefetcher over both.
struct Setup {
  Setup(size_t count, uint64_t size, OrderOptions oo, ReadaheadOptions ro = options(),
        uint64_t cache_bytes = 1 << 30)
      : cache({.capacity_bytes = cache_bytes}),
        path(std::make_unique<ReadPath>(store, cache, "test-bucket", ro)) {
    for (size_t i = 0; i < count; ++i) {
      const std::string name = "d/f" + std::to_string(10000 + i);
      data[name] = random_bytes(size, i + 1);
      versions[name] = ObjectVersion{name, bucket.put_object(name, data[name]), size};
      names.push_back(name);
    }
    store.set_delay(Op::kGetRange, 2ms);
    order = path->make_order_prefetcher(
        "",
        [this](const std::string& p) -> Result<ObjectVersion> {
          auto it = versions.find(p);
          if (it == versions.end()) return Status(Errc::kNotFound, "no " + p);
          return it->second;
        },
        oo);
  }

  // Reads [offset, offset + length) of name the way the core does (read_started, the read,
  // read_finished); true if the bytes are right. Safe from any thread (no Catch assertion).
  bool read_ok(const std::string& name, uint64_t offset = 0, uint64_t length = kWholeFile) {
    const std::vector<std::byte>& src = data.at(name);
    length = std::min<uint64_t>(length, src.size() - offset);
    order->read_started(name, offset, length);
    auto r = path->open(versions.at(name));
    std::vector<std::byte> buf(length);
    Result<size_t> n = r->read(offset, buf);
    order->read_finished(name, offset, length);
    return n.is_ok() && *n == length && std::memcmp(buf.data(), src.data() + offset, length) == 0;
  }
  // The same, on the test's thread.
  void read(const std::string& name, uint64_t offset = 0, uint64_t length = kWholeFile) {
    REQUIRE(read_ok(name, offset, length));
  }

  std::vector<OrderEntry> shuffled(uint64_t seed) const {
    std::vector<OrderEntry> o;
    for (const auto& n : names) o.push_back(OrderEntry{n});
    std::shuffle(o.begin(), o.end(), std::mt19937_64(seed));
    return o;
  }

  // Range GETs of the order's keys, in the order they reached the store.
  std::vector<std::string> get_keys() const {
    std::vector<std::string> keys;
    for (const auto& c : store.calls()) {
      if (c.op == Op::kGetRange) keys.push_back(c.key);
    }
    return keys;
  }

  MemoryObjectStore bucket;
  FaultInjectingStore store{bucket};
  MemoryCache cache;
  std::map<std::string, std::vector<std::byte>> data;
  std::map<std::string, ObjectVersion> versions;
  std::vector<std::string> names;
  std::unique_ptr<ReadPath> path;
  std::unique_ptr<OrderPrefetcher> order;  // after path: it goes first
};

}  // namespace

TEST_CASE("order prefetch fetches entries in the published order, a lead ahead", "[order]") {
  OrderOptions oo;
  oo.max_requests = 1;  // one at a time: the GETs' order is the fetch order
  oo.initial_lead = 20;
  Setup s(200, 3000, oo);
  const auto order = s.shuffled(7);
  s.order->publish(order);
  // Nobody reads: it stops at the lead.
  REQUIRE(eventually([&] {
    const OrderCounters c = s.order->counters();
    return c.order_fetched == 20 && c.requests_inflight == 0;
  }));
  const std::vector<std::string> gets = s.get_keys();
  REQUIRE(gets.size() == 20);
  for (size_t i = 0; i < gets.size(); ++i) CHECK(gets[i] == order[i].path);
  // Readers that follow the order move the head, and the fetches keep ahead of it.
  for (size_t i = 0; i < 100; ++i) {
    s.read(order[i].path);
    const OrderCounters c = s.order->counters();
    CHECK(c.order_fetched <= c.head + c.lead);
  }
  REQUIRE(eventually([&] { return s.order->counters().order_fetched >= 100 + 20; }));
  const OrderCounters c = s.order->counters();
  CHECK(c.head == 100);
  CHECK(c.order_read == 100);
  // Every entry came from the bucket once; those nobody read (100 on) in the order's order.
  // (A reader may ask for its entry just after the prefetcher passed it by as read.)
  const std::vector<std::string> after = s.get_keys();
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < order.size(); ++i) index_of[order[i].path] = i;
  size_t last_unread = 99;
  for (const auto& k : after) {
    if (index_of[k] < 100) continue;
    CHECK(index_of[k] == last_unread + 1);
    last_unread = index_of[k];
  }
  CHECK(last_unread >= 119);
  std::map<std::string, int> per_key;
  for (const auto& k : after) ++per_key[k];
  for (const auto& [k, n] : per_key) CHECK(n == 1);
}

TEST_CASE("order prefetch: readers in parallel read every entry once from the bucket", "[order]") {
  OrderOptions oo;
  oo.max_requests = 6;
  oo.initial_lead = 8;
  Setup s(400, 5000, oo);
  const auto order = s.shuffled(11);
  s.order->publish(order);
  std::atomic<size_t> next{0};
  std::atomic<size_t> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      for (size_t i = next++; i < order.size(); i = next++) {
        if (!s.read_ok(order[i].path)) ++wrong;
      }
    });
  }
  for (auto& t : readers) t.join();
  CHECK(wrong == 0);
  // (A reader that gets to a two-chunk file first asks for each chunk; the prefetcher asks
  // for both at once: so bytes, not requests, show that nothing was fetched twice.)
  CHECK(s.store.bytes_returned() == order.size() * 5000);
  const OrderCounters c = s.order->counters();
  CHECK(c.order_read == order.size());
  CHECK(c.read_entries == order.size());
  // Readers at full speed outran a lead of 8: it grew.
  CHECK(c.lead > 8);
  CHECK(c.fetched_entries > order.size() / 2);
  REQUIRE(eventually([&] { return s.path->counters().inflight_bytes == 0; }));
}

TEST_CASE("order prefetch: a new order replaces the old one", "[order]") {
  OrderOptions oo;
  oo.max_requests = 2;
  oo.initial_lead = 10;
  Setup s(100, 3000, oo);
  const auto all = s.shuffled(3);
  const std::vector<OrderEntry> a(all.begin(), all.begin() + 50);
  const std::vector<OrderEntry> b(all.begin() + 50, all.end());
  CHECK(s.order->publish(a) == 1);
  REQUIRE(eventually([&] {
    const OrderCounters c = s.order->counters();
    return c.order_fetched == 10 && c.requests_inflight == 0;
  }));
  CHECK(s.order->publish(b) == 2);
  REQUIRE(eventually([&] {
    const OrderCounters c = s.order->counters();
    return c.order_fetched == 10 && c.requests_inflight == 0 && c.orders == 2;
  }));
  // Reading all of b fetches the rest of b, and nothing more of a.
  for (const auto& e : b) s.read(e.path);
  std::map<std::string, int> gets;
  for (const auto& k : s.get_keys()) ++gets[k];
  size_t of_a = 0;
  for (const auto& e : a) of_a += gets.count(e.path);
  CHECK(of_a == 10);
  for (const auto& e : b) CHECK(gets[e.path] == 1);
  const OrderCounters c = s.order->counters();
  CHECK(c.wasted_entries == 10);  // a's lead, let go of unread
  CHECK(c.order_entries == b.size());
  CHECK(c.order_read == b.size());
}

TEST_CASE("order prefetch stays within the read-ahead budget and keeps what is ahead", "[order]") {
  OrderOptions oo;
  oo.max_requests = 4;
  oo.initial_lead = 1000;  // the budget is the bound
  // A budget of 12 chunks, and a memory cache of 2: what is fetched ahead outlives the
  // cache's evictions (the pins hold it), so no entry is fetched twice.
  Setup s(60, kChunk, oo, options(12), 2 * kChunk);
  const auto order = s.shuffled(5);
  s.order->publish(order);
  REQUIRE(eventually([&] { return s.order->counters().order_fetched == 12; }));
  CHECK(s.path->counters().inflight_bytes <= 12 * kChunk);
  for (const auto& e : order) {
    s.read(e.path);
    CHECK(s.path->counters().inflight_bytes <= 12 * kChunk);
  }
  CHECK(s.store.call_count(Op::kGetRange) == order.size());
  CHECK(s.order->counters().fetched_entries >= order.size() - 12);
}

TEST_CASE("order prefetch: entries read out of order or skipped cost nothing extra", "[order]") {
  OrderOptions oo;
  oo.max_requests = 2;
  oo.initial_lead = 6;
  oo.behind = 4;
  Setup s(80, 3000, oo);
  const auto order = s.shuffled(9);
  // Read far ahead before publishing's fetches reach it: the prefetcher passes it by.
  s.order->publish(order);
  s.read(order[70].path);
  // Readers skip entries 10..19.
  for (size_t i = 0; i < order.size(); ++i) {
    if (i >= 10 && i < 20) continue;
    if (i == 70) continue;
    s.read(order[i].path);
  }
  REQUIRE(eventually([&] { return s.order->counters().requests_inflight == 0; }));
  std::map<std::string, int> gets;
  for (const auto& k : s.get_keys()) ++gets[k];
  for (const auto& [k, n] : gets) CHECK(n == 1);
  CHECK(gets[order[70].path] == 1);
  const OrderCounters c = s.order->counters();
  CHECK(c.order_read == order.size() - 10);
  CHECK(c.head == order.size());
  // The skipped ones that were fetched were let go of once the readers were past.
  CHECK(c.wasted_entries <= 10);
  REQUIRE(eventually([&] { return s.path->counters().inflight_bytes == 0; }));
}

TEST_CASE("order prefetch of ranges inside one object", "[order]") {
  OrderOptions oo;
  oo.max_requests = 4;
  oo.initial_lead = 16;
  Setup s(1, 64 * kChunk, oo);
  const std::string name = s.names[0];
  // Records of 1000 bytes at scattered offsets, some sharing a chunk.
  std::vector<OrderEntry> order;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 120; ++i) order.push_back(OrderEntry{name, rng() % (63 * kChunk), 1000});
  s.order->publish(order);
  for (const auto& e : order) s.read(name, e.offset, e.length);
  std::map<uint64_t, int> per_offset;
  for (const auto& c : s.store.calls()) {
    if (c.op == Op::kGetRange) ++per_offset[c.offset];
  }
  uint64_t chunks = 0;
  for (const auto& c : s.store.calls()) {
    if (c.op == Op::kGetRange) chunks += (c.length + kChunk - 1) / kChunk;
  }
  for (const auto& [off, n] : per_offset) CHECK(n == 1);
  CHECK(chunks <= 64);
  CHECK(s.order->counters().order_read == order.size());
}

TEST_CASE("order prefetch skips entries that do not resolve", "[order]") {
  OrderOptions oo;
  oo.initial_lead = 4;
  Setup s(10, 3000, oo);
  std::vector<OrderEntry> order = s.shuffled(2);
  order.insert(order.begin() + 1, OrderEntry{"d/missing"});
  s.order->publish(order);
  for (const auto& e : order) {
    if (e.path != "d/missing") s.read(e.path);
  }
  REQUIRE(eventually([&] { return s.order->counters().unresolved_entries == 1; }));
  CHECK(s.store.call_count(Op::kGetRange) == 10);
}

TEST_CASE("order prefetch: opens count as reads of whole files, not of ranges", "[order]") {
  OrderOptions oo;
  oo.max_requests = 4;
  oo.initial_lead = 10;
  oo.behind = 1000;
  Setup s(100, 3000, oo);
  const auto order = s.shuffled(8);
  s.order->publish(order);
  // Readers whose reads the kernel's page cache answers: warmfs sees only open and close.
  for (const auto& e : order) {
    REQUIRE(eventually([&] {
      const OrderCounters c = s.order->counters();
      return c.order_fetched + c.order_read > c.head;  // the prefetcher keeps ahead
    }));
    s.order->file_opened(e.path);
    s.order->file_closed(e.path);
  }
  OrderCounters c = s.order->counters();
  CHECK(c.order_read == order.size());
  CHECK(c.head == order.size());
  CHECK(c.wasted_entries == 0);
  // Read entries are let go of at their close, not held until far behind.
  REQUIRE(eventually([&] { return s.path->counters().inflight_bytes == 0; }));
  // Ranges of an object are not read by opening it.
  const std::string name = s.names[0];
  s.order->publish({OrderEntry{name, 0, 100}, OrderEntry{name, 200, 100}});
  s.order->file_opened(name);
  CHECK(s.order->counters().order_read == 0);
  s.order->read_started(name, 150, 100);
  CHECK(s.order->counters().order_read == 1);
}

TEST_CASE("order prefetch: a one-entry order of a short key", "[order]") {
  // Its keys fit in a string's own buffer (no heap): the index must still point at them.
  Setup s(3, 3000, OrderOptions{});
  s.order->publish({OrderEntry{s.names[1]}});
  REQUIRE(eventually([&] { return s.order->counters().order_fetched == 1; }));
  s.read(s.names[1]);
  CHECK(s.order->counters().order_read == 1);
  CHECK(s.store.call_count(Op::kGetRange) == 1);
}

TEST_CASE("order prefetch: a read that only touches an entry's edge does not read it", "[order]") {
  OrderOptions oo;
  oo.max_requests = 2;
  oo.initial_lead = 8;
  oo.behind = 8;
  Setup s(1, 64 * kChunk, oo);
  const std::string name = s.names[0];
  // Token windows back to back, in a shuffled order; each read widened to whole 256-byte
  // pages, as the kernel reads, so it also touches the ends of the windows beside it.
  constexpr uint64_t kWindow = 1000;
  std::vector<OrderEntry> order;
  for (uint64_t off = 0; off + kWindow <= 64 * kChunk; off += kWindow) {
    order.push_back(OrderEntry{name, off, kWindow});
  }
  std::shuffle(order.begin(), order.end(), std::mt19937_64(4));
  s.order->publish(order);
  size_t read = 0;
  size_t miscounted = 0;
  for (const auto& e : order) {
    const uint64_t from = e.offset / 256 * 256;
    const uint64_t to = (e.offset + e.length + 255) / 256 * 256;
    s.read(name, from, to - from);
    ++read;
    const OrderCounters c = s.order->counters();
    if (c.order_read != read || c.head != read) ++miscounted;
  }
  // Each read counted its own window only, so the head followed the reader exactly and
  // nothing fetched ahead fell behind it unread.
  CHECK(miscounted == 0);
  const OrderCounters c = s.order->counters();
  CHECK(c.order_read == order.size());
  CHECK(c.wasted_entries == 0);
  CHECK(s.store.bytes_returned() == 64 * kChunk);
}

TEST_CASE("order prefetch: readers that start part way through the order are followed", "[order]") {
  OrderOptions oo;
  oo.max_requests = 4;
  oo.initial_lead = 32;
  Setup s(1600, 3000, oo);
  const auto order = s.shuffled(6);
  s.order->publish(order);
  // An epoch resumed at its 1,000th entry: the first ones are never read.
  for (size_t i = 1000; i < order.size(); ++i) s.read(order[i].path);
  const OrderCounters c = s.order->counters();
  CHECK(c.head == order.size());
  CHECK(c.order_read == 600);
  // The head came to the readers within a few hundred reads, and the prefetcher went on
  // ahead of them from there.
  CHECK(c.fetched_entries >= 250);
  CHECK(s.store.call_count(Op::kGetRange) <= 600 + 32 + 64);
}

TEST_CASE("order prefetch: records that share a run of chunks share a request", "[order]") {
  OrderOptions oo;
  oo.max_requests = 2;
  oo.initial_lead = 64;
  Setup s(1, 64 * kChunk, oo);
  const std::string name = s.names[0];
  // One record in each chunk, in a shuffled order: the lead holds them all.
  std::vector<OrderEntry> order;
  for (uint64_t c = 0; c < 64; ++c) order.push_back(OrderEntry{name, c * kChunk + 100, 1000});
  std::shuffle(order.begin(), order.end(), std::mt19937_64(12));
  s.order->publish(order);
  REQUIRE(eventually([&] {
    const OrderCounters c = s.order->counters();
    return c.order_fetched == 64 && c.requests_inflight == 0;
  }));
  // Each request took up to max_run_chunks chunks that others needed: far fewer requests
  // than chunks, and no chunk fetched twice.
  CHECK(s.store.call_count(Op::kGetRange) <= 64 / 4);
  CHECK(s.store.bytes_returned() == 64 * kChunk);
  for (const auto& e : order) s.read(name, e.offset, e.length);
  CHECK(s.store.bytes_returned() == 64 * kChunk);
  CHECK(s.order->counters().wasted_entries == 0);
}

TEST_CASE("order prefetch: a large entry cut short takes no chunks for others", "[order]") {
  OrderOptions oo;
  oo.max_requests = 1;
  oo.initial_lead = 8;
  // A budget of 8 chunks: an entry is fetched ahead up to a quarter of it, 2 chunks.
  Setup s(1, 16 * kChunk, oo, options(8));
  const std::string name = s.names[0];
  s.order->publish({OrderEntry{name, 0, 4 * kChunk}, OrderEntry{name, 4 * kChunk + 10, 100},
                    OrderEntry{name, 5 * kChunk + 10, 100}});
  REQUIRE(eventually([&] {
    const OrderCounters c = s.order->counters();
    return c.order_fetched == 3 && c.requests_inflight == 0;
  }));
  // The first entry's chunks 0 and 1; chunks 4 and 5 for the records (one request). Not
  // chunks 2 and 3, which the chunks taken for the records would name if its request went on.
  CHECK(s.store.bytes_returned() == 4 * kChunk);
  for (const auto& c : s.store.calls()) {
    if (c.op == Op::kGetRange) CHECK((c.offset + c.length <= 2 * kChunk || c.offset >= 4 * kChunk));
  }
}
