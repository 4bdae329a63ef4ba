// One flat directory of many pages lists in parallel (split_key_range and take_snapshot), and
// exactly as a serial listing does.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <random>
#include <thread>

#include "snapshot/key_split.h"
#include "snapshot/snapshot_lister.h"
#include "support/fake_clock.h"
#include "support/memory_object_store.h"

using namespace warmfs;

namespace {

// Counts the listings of one directory in flight at once; each listing takes a millisecond (a
// real sleep), as a request to S3 takes a while.
class SlowLists : public MemoryObjectStore {
 public:
  SlowLists(Clock& clock, std::string dir) : MemoryObjectStore("b", clock), dir_(std::move(dir)) {}
  Result<ListPage> list(const ListRequest& request) override {
    const bool counted = request.prefix == dir_;
    const int now = counted ? in_flight_.fetch_add(1) + 1 : 0;
    int seen = max_in_flight_.load();
    while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto page = MemoryObjectStore::list(request);
    if (counted) in_flight_.fetch_sub(1);
    return page;
  }
  int max_in_flight() const { return max_in_flight_.load(); }

 private:
  const std::string dir_;
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
};

// Every key below prefix, by one serial listing without a delimiter.
std::vector<std::string> serial_keys(ObjectStore& s, const std::string& prefix) {
  std::vector<std::string> out;
  ListRequest req;
  req.prefix = prefix;
  req.delimiter = "";
  for (;;) {
    auto page = s.list(req);
    REQUIRE(page.is_ok());
    for (auto& o : page->objects) out.push_back(o.key);
    if (!page->truncated) break;
    req.continuation_token = page->next_token;
  }
  return out;
}

struct Shape {
  const char* name;
  std::function<std::string(size_t)> key;  // the i-th name in the flat directory
  size_t subdirs;                          // names ending in "/x": directories of one key
};

std::vector<Shape> shapes() {
  auto hex = [](size_t i) {
    std::mt19937_64 rng(i * 7919 + 1);
    return fmt::format("{:016x}{:016x}", rng(), rng());
  };
  const std::vector<std::string> words = {"café",         "日本語", "zürich",  "ß",
                                          "\xff\xfe raw", "a",      "Ω-omega", "~tilde"};
  return {
      {"numeric", [](size_t i) { return fmt::format("{:06}.bin", i); }, 0},
      {"shards", [](size_t i) { return fmt::format("shard-{:09}.tar", i * 13); }, 0},
      {"random hex", hex, 0},
      {"utf-8 and high bytes",
       [words](size_t i) { return fmt::format("{}{}", words[i % words.size()], i); }, 0},
      // Files and directories interleaved, and names that sort around "/" ('!' < '/' < '0').
      {"mixed",
       [hex](size_t i) {
         if (i % 5 == 0) return fmt::format("d{:06}/x", i);
         if (i % 5 == 1) return fmt::format("d{:06}!", i - 1);
         if (i % 5 == 2) return fmt::format("d{:06}0", i - 2);
         return hex(i);
       },
       10'000},
  };
}

}  // namespace

TEST_CASE("a flat directory lists in parallel, each key once, as a serial listing does",
          "[snapshot][flat]") {
  const size_t n = 50'000;
  for (const Shape& shape : shapes()) {
    INFO("shape " << shape.name);
    FakeClock clock;
    SlowLists bucket(clock, "data/flat/");
    for (size_t i = 0; i < n; ++i) bucket.put_object("data/flat/" + shape.key(i), "x");
    bucket.put_object("data/before", "x");
    bucket.put_object("data/flat", "not in the directory");
    bucket.put_object("data/flat0/after", "x");
    const std::vector<std::string> expected = serial_keys(bucket, "data/");

    SnapshotListOptions o;
    o.concurrency = 8;
    SnapshotListStats stats;
    const uint64_t lists_before = bucket.counters().list_requests;
    auto m = take_snapshot(bucket, "b", "data/", 42, o, &stats);
    REQUIRE(m.is_ok());
    std::vector<std::string> got;
    for (size_t i = 0; i < m->size(); ++i) got.push_back("data/" + std::string(m->key(i)));
    REQUIRE(got.size() == expected.size());
    CHECK(got == expected);
    CHECK(stats.keys.load() == expected.size());  // no key added twice
    CHECK(bucket.max_in_flight() > 1);            // listings of data/flat/ itself
    const uint64_t lists = bucket.counters().list_requests - lists_before;
    CHECK(stats.list_requests.load() == lists);
    // One request per directory of one key, and the flat directory's pages (of keys and
    // directories), with little waste.
    const double pages = double(n) / 1000.0;
    CHECK(lists >= shape.subdirs + pages);
    // Guesses that are off (sparse names) cost a few empty ranges per level of splitting.
    CHECK(double(lists) <= shape.subdirs + pages * 1.3 + 4 * o.concurrency);
  }
}

TEST_CASE("split_key_range cuts between the last name and the end", "[snapshot][flat]") {
  std::vector<std::string> sample;
  for (int i = 0; i < 1000; ++i) sample.push_back(fmt::format("flat/{:06}", i));
  KeySplitInput in{"flat/", sample.front(), sample.back(), "", 1000, sample};
  auto cuts = split_key_range(in, 8000, 32);
  // The rest (to 999999, as the digits suggest) is about 999 pages: 32 parts.
  REQUIRE(cuts.size() == 31);
  CHECK(cuts.front() > sample.back());
  CHECK(std::is_sorted(cuts.begin(), cuts.end()));
  CHECK(std::adjacent_find(cuts.begin(), cuts.end()) == cuts.end());
  for (const std::string& c : cuts) CHECK(c.compare(0, 5, "flat/") == 0);
  CHECK(cuts.front() < "flat/1");
  CHECK(cuts.back() > "flat/9");

  // A bounded range: every cut strictly inside.
  in.hi = "flat/004000";
  cuts = split_key_range(in, 1000, 32);
  REQUIRE(!cuts.empty());
  for (const std::string& c : cuts) {
    CHECK(c > in.last);
    CHECK(c < in.hi);
  }
  // A rest smaller than two parts is not cut.
  CHECK(split_key_range(in, 2000, 32).empty());
  in.hi = "flat/000999";  // nothing after the last name
  CHECK(split_key_range(in, 1, 32).empty());
}
