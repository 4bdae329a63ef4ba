// The order file's format, the control directory, order prefetch through the core, epochs.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "fs/order_file.h"
#include "support/fs_fixture.h"
#include "support/wait.h"

using namespace warmfs;
using namespace std::chrono_literals;
using Op = FaultInjectingStore::Op;
using testing::eventually;

namespace {

std::span<const std::byte> bytes_of(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// The core as a read-only mount runs it (listings alone answer lookups, no HEAD per object),
// with a long metadata TTL.
struct Fixture : testing::FsFixture {
  explicit Fixture(std::string prefix = "", std::chrono::seconds interval = 60s)
      : FsFixture(options(std::move(prefix), interval)) {}

  static testing::FsFixtureOptions options(std::string prefix, std::chrono::seconds interval) {
    testing::FsFixtureOptions o{.prefix = std::move(prefix)};
    o.meta.ttl = 3600s;
    o.meta.object_attrs = false;  // a read-only mount's default
    o.readahead.fetch_threads = 8;
    o.fs = FsOptions{};  // read-only, owned by root
    o.fs.epoch_interval = interval;
    o.fs.order.max_requests = 4;
    return o;
  }

  uint64_t lookup(const std::string& path) {
    auto a = resolve(path);
    REQUIRE(a.is_ok());
    return a->ino;
  }

  // Writes text to the order file and closes it; close()'s status.
  Status publish(const std::string& text) {
    REQUIRE(fs->lookup(kRootIno, ".warmfs").is_ok());
    auto order = fs->lookup(kControlDirIno, "order");
    REQUIRE(order.is_ok());
    auto h = fs->open(order->ino, O_WRONLY | O_TRUNC);
    REQUIRE(h.is_ok());
    // In two writes, as a large file arrives.
    const size_t half = text.size() / 2;
    REQUIRE(fs->write(*h->handle, 0, bytes_of(text).first(half)).is_ok());
    REQUIRE(fs->write(*h->handle, half, bytes_of(text).subspan(half)).is_ok());
    Status st = fs->flush(*h->handle);
    fs->release(std::move(h->handle));
    return st;
  }

  std::string read_file(const std::string& path) {
    auto h = fs->open(lookup(path), O_RDONLY);
    REQUIRE(h.is_ok());
    std::vector<std::byte> buf(1 << 20);
    auto n = fs->read(*h->handle, 0, buf);
    REQUIRE(n.is_ok());
    fs->release(std::move(h->handle));
    return std::string(reinterpret_cast<const char*>(buf.data()), *n);
  }
};

}  // namespace

TEST_CASE("order files: entries, ranges, escapes, comments", "[order]") {
  auto r = parse_order(
      "warmfs-order 1\n"
      "# a comment\n"
      "a/b.jpg\n"
      "\n"
      "shards/s%20one.tar 1024 100\r\n"
      "x%25y%09z\t5\t6");
  REQUIRE(r.is_ok());
  REQUIRE(r->size() == 3);
  CHECK((*r)[0].path == "a/b.jpg");
  CHECK((*r)[0].length == kWholeFile);
  CHECK((*r)[1].path == "shards/s one.tar");
  CHECK((*r)[1].offset == 1024);
  CHECK((*r)[1].length == 100);
  CHECK((*r)[2].path == "x%y\tz");
  CHECK((*r)[2].offset == 5);
  CHECK(escape_order_path("x%y\tz") == "x%25y%09z");
  CHECK(escape_order_path("a b\n") == "a%20b%0A");
  auto back = parse_order("warmfs-order 1\n" + escape_order_path("we ird/%na me") + "\n");
  REQUIRE(back.is_ok());
  CHECK((*back)[0].path == "we ird/%na me");
  CHECK(parse_order("warmfs-order 1\n")->empty());
}

TEST_CASE("order files: bad input is one clear error with its line", "[order]") {
  auto err = [](const std::string& text) {
    auto r = parse_order(text);
    REQUIRE(!r.is_ok());
    CHECK(r.code() == Errc::kInvalidArgument);
    return r.status().message();
  };
  CHECK(err("") == "line 1: empty order file");
  CHECK(err("a/b\n").find("line 1: expected \"warmfs-order 1\"") == 0);
  CHECK(err("warmfs-order 2\na\n").find("line 1:") == 0);
  CHECK(err("warmfs-order 1\na\n/abs\n").find("line 3: the path must be relative") == 0);
  CHECK(err("warmfs-order 1\na/../b\n").find("line 2:") == 0);
  CHECK(err("warmfs-order 1\na//b\n").find("line 2:") == 0);
  CHECK(err("warmfs-order 1\na 1\n").find("line 2: expected PATH") == 0);
  CHECK(err("warmfs-order 1\na 1 x\n").find("line 2: OFFSET and LENGTH") == 0);
  CHECK(err("warmfs-order 1\na -1 5\n").find("line 2: OFFSET and LENGTH") == 0);
  CHECK(err("warmfs-order 1\na 0 0\n").find("line 2: LENGTH must not be 0") == 0);
  CHECK(err("warmfs-order 1\na%2\n").find("line 2: bad %XX") == 0);
  CHECK(err("warmfs-order 1\na%zz\n").find("line 2: bad %XX") == 0);
}

TEST_CASE("the control directory is served by the core, hidden and unchangeable", "[order]") {
  Fixture f;
  f.bucket.put_object("d/a", "aaa");
  auto dir = f.fs->lookup(kRootIno, ".warmfs");
  REQUIRE(dir.is_ok());
  CHECK(dir->ino == kControlDirIno);
  CHECK(dir->is_dir);
  auto order = f.fs->lookup(kControlDirIno, "order");
  REQUIRE(order.is_ok());
  CHECK(order->ino == kOrderFileIno);
  CHECK((order->mode & S_IFMT) == S_IFREG);
  CHECK(order->size == 0);
  CHECK(f.fs->lookup(kControlDirIno, "other").code() == Errc::kNotFound);
  CHECK(f.fs->getattr(kOrderFileIno)->ino == kOrderFileIno);
  CHECK(f.fs->parent_of(kOrderFileIno) == kControlDirIno);
  // Listed in its directory, not in the root's.
  auto root = f.fs->opendir(kRootIno);
  REQUIRE(root.is_ok());
  auto names = (*root)->read_all();
  REQUIRE(names.is_ok());
  for (const auto& e : *names) CHECK(e.name != ".warmfs");
  auto listing = f.fs->opendir(kControlDirIno);
  REQUIRE(listing.is_ok());
  auto entries = (*listing)->read_all();
  REQUIRE(entries.is_ok());
  REQUIRE(entries->size() == 1);
  CHECK((*entries)[0].name == "order");
  // Nothing changes it; the mount is read-only and the order file is still writable.
  CHECK(f.fs->mkdir(kControlDirIno, "x").code() == Errc::kNotPermitted);
  CHECK(f.fs->unlink(kControlDirIno, "order").code() == Errc::kNotPermitted);
  CHECK(f.fs->rmdir(kRootIno, ".warmfs").code() == Errc::kNotPermitted);
  CHECK(f.fs->create(kControlDirIno, "y", O_WRONLY).code() == Errc::kNotPermitted);
  CHECK(f.fs->rename(kRootIno, ".warmfs", kRootIno, "z", 0).code() == Errc::kNotPermitted);
  // Reading it gives nothing.
  auto h = f.fs->open(kOrderFileIno, O_RDONLY);
  REQUIRE(h.is_ok());
  std::vector<std::byte> buf(100);
  CHECK(*f.fs->read(*h->handle, 0, buf) == 0);
  f.fs->release(std::move(h->handle));
  // Nothing reached the bucket but the listing of the root.
  CHECK(f.store.call_count(Op::kPut) == 0);
  CHECK(f.store.call_count(Op::kGetRange) == 0);
  CHECK(f.store.call_count(Op::kHead) == 0);
}

TEST_CASE("closing the order file publishes it; a bad one fails the close", "[order]") {
  Fixture f;
  REQUIRE(f.publish("warmfs-order 1\na\nb 0 10\n").is_ok());
  OrderCounters c = f.fs->order_counters();
  CHECK(c.orders == 1);
  CHECK(c.order_entries == 2);
  Status bad = f.publish("warmfs-order 1\n../escape\n");
  CHECK(bad.code() == Errc::kInvalidArgument);
  CHECK(bad.message().find("line 2") != std::string::npos);
  CHECK(f.fs->order_counters().orders == 1);
  // A second flush of the same handle (a dup'd descriptor closed) publishes nothing new.
  auto h = f.fs->open(kOrderFileIno, O_WRONLY);
  REQUIRE(h.is_ok());
  REQUIRE(f.fs->write(*h->handle, 0, bytes_of("warmfs-order 1\nc\n")).is_ok());
  REQUIRE(f.fs->flush(*h->handle).is_ok());
  REQUIRE(f.fs->flush(*h->handle).is_ok());
  f.fs->release(std::move(h->handle));
  CHECK(f.fs->order_counters().orders == 2);
  CHECK(f.fs->order_counters().order_entries == 1);
}

TEST_CASE("an order published through the core is prefetched and followed by reads", "[order]") {
  for (std::string prefix : {"", "pre/"}) {
    DYNAMIC_SECTION("prefix " << prefix) {
      Fixture f(prefix);
      std::vector<std::string> names;
      for (int i = 0; i < 60; ++i) {
        names.push_back("data/f" + std::to_string(100 + i));
        f.bucket.put_object(prefix + names.back(), std::string(3000 + i, char('a' + i % 26)));
      }
      f.bucket.put_object("elsewhere/x", "not in the mount");
      std::shuffle(names.begin(), names.end(), std::mt19937(4));
      std::string text = "warmfs-order 1\n";
      for (const auto& n : names) text += n + "\n";
      REQUIRE(f.publish(text).is_ok());
      // Nobody reads yet: it fetches the first lead of entries on its own.
      REQUIRE(eventually([&] { return f.fs->order_counters().order_fetched >= 30; }));
      for (size_t i = 0; i < names.size(); ++i) {
        const std::string got = f.read_file(names[i]);
        CHECK(got.size() == 3000 + std::stoul(names[i].substr(6)) - 100);
      }
      const OrderCounters c = f.fs->order_counters();
      CHECK(c.order_read == names.size());
      CHECK(c.head == names.size());
      // Every file was fetched once, whether the prefetcher or the reader got there first.
      CHECK(f.store.call_count(Op::kGetRange) == names.size());
      auto j = nlohmann::json::parse(f.fs->stats_json());
      CHECK(j["order"]["read"] == names.size());
      CHECK(j["order"]["orders"] == 1);
    }
  }
}

TEST_CASE("epochs: one per order, read through at its last read; intervals otherwise", "[order]") {
  Fixture f("", 10s);
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) {
    names.push_back("d/f" + std::to_string(10 + i));
    f.bucket.put_object(names.back(), std::string(1000, 'x'));
  }
  // Without an order: an interval epoch, samples are files opened. Each GET takes 10 ms of
  // the fake clock, which the reads wait for: the input stall.
  // (Opened far apart in the listing, so no small-file warming joins in.)
  f.store.set_before_get([&](std::string_view, uint64_t) { f.clock.advance(10ms); });
  for (int i : {0, 30, 1, 31, 2}) f.read_file(names[i]);
  f.clock.advance(10s);
  f.read_file(names[25]);  // rolls the interval
  std::vector<Epoch> e = f.fs->epochs();
  REQUIRE(e.size() == 2);
  CHECK(e[0].order == 0);
  CHECK(!e[0].running);
  CHECK(e[0].samples() == 5);
  CHECK(e[0].end.bucket_gets - e[0].start.bucket_gets == 5);
  CHECK(e[0].end.stall_ns - e[0].start.stall_ns == 50'000'000);
  CHECK(e[1].running);
  f.store.set_before_get({});
  // An order: its epoch starts at publication and ends at its last read.
  const std::vector<int> order{10, 35, 11, 36, 12, 37, 13, 38, 14, 39};
  std::string text = "warmfs-order 1\n";
  for (int i : order) text += names[i] + "\n";
  REQUIRE(f.publish(text).is_ok());
  for (int i : order) {
    f.clock.advance(1s);
    f.read_file(names[i]);
  }
  f.clock.advance(5s);
  f.read_file(names[0]);  // after the order: the check finds it read through
  e = f.fs->epochs();
  REQUIRE(e.size() == 4);
  CHECK(e[2].order == 1);
  CHECK(e[2].entries == 10);
  CHECK(!e[2].running);
  CHECK(e[2].samples() == 10);
  CHECK(e[2].seconds() == Approx(10.0));
  CHECK(e[2].end.bucket_gets - e[2].start.bucket_gets == 10);
  CHECK(e[3].order == 0);
  CHECK(e[3].running);
  auto j = nlohmann::json::parse(f.fs->stats_json());
  REQUIRE(j["epochs"].size() == 4);
  CHECK(j["epochs"][2]["kind"] == "order");
  CHECK(j["epochs"][2]["samples_per_second"].get<double>() == Approx(1.0));
  CHECK(j["epochs"][2]["bucket_gets"] == 10);
  CHECK(j["epochs"][0]["stall_seconds"].get<double>() == Approx(0.05));
}

TEST_CASE("epochs: an order read through the page cache (opens only) ends at its last open",
          "[order]") {
  Fixture f;
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) {
    names.push_back("d/f" + std::to_string(i));
    f.bucket.put_object(names.back(), std::string(100, 'y'));
  }
  std::string text = "warmfs-order 1\n";
  for (const auto& n : names) text += n + "\n";
  REQUIRE(f.publish(text).is_ok());
  for (const auto& n : names) {
    f.clock.advance(1s);
    auto h = f.fs->open(f.lookup(n), O_RDONLY);  // the kernel answers the reads itself
    REQUIRE(h.is_ok());
    f.fs->release(std::move(h->handle));
  }
  f.clock.advance(3s);
  f.read_file(names[0]);
  std::vector<Epoch> e = f.fs->epochs();
  REQUIRE(e.size() == 3);
  CHECK(e[1].order == 1);
  CHECK(!e[1].running);
  CHECK(e[1].samples() == 4);
  CHECK(e[1].seconds() == Approx(4.0));
}
