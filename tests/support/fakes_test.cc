// Tests of the test fakes themselves: other layers' tests trust them to behave like S3.
#include <catch2/catch.hpp>
#include <set>

#include "support/fake_clock.h"
#include "support/fault_injecting_store.h"
#include "support/memory_object_store.h"

using namespace warmfs;
using namespace std::chrono_literals;

namespace {

// Every key and prefix of a listing, following continuation tokens.
std::vector<std::string> list_all(ObjectStore& s, const std::string& prefix,
                                  const std::string& delim, int max_keys, int* pages = nullptr,
                                  const std::string& start_after = "") {
  std::vector<std::string> out;
  ListRequest req{prefix, delim, "", max_keys, start_after};
  for (int n = 1;; ++n) {
    Result<ListPage> page = s.list(req);
    REQUIRE(page.is_ok());
    REQUIRE(page->objects.size() + page->common_prefixes.size() <= size_t(max_keys));
    for (const auto& o : page->objects) out.push_back(o.key);
    for (const auto& p : page->common_prefixes) out.push_back(p);
    if (!page->truncated) {
      CHECK(page->next_token.empty());
      if (pages) *pages = n;
      break;
    }
    REQUIRE_FALSE(page->next_token.empty());
    req.continuation_token = page->next_token;
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("memory store: head, ETags as MD5, ranges and If-Match", "[support]") {
  FakeClock clock;
  MemoryObjectStore s("b", clock);
  CHECK(s.put_object("empty", "") == "d41d8cd98f00b204e9800998ecf8427e");
  const std::string etag = s.put_object("k", "hello world");
  CHECK(etag == "5eb63bbbe01eeed093cb22bb8f5acdc3");
  Result<ObjectInfo> info = s.head("k");
  REQUIRE(info.is_ok());
  CHECK(info->size == 11);
  CHECK(info->etag == etag);
  CHECK(info->mtime_sec == FakeClock::kDefaultWallSeconds);
  CHECK(s.head("nope").code() == Errc::kNotFound);

  std::vector<std::byte> buf(5);
  REQUIRE(*s.get_range("k", 6, buf, etag) == 5);
  CHECK(std::string(reinterpret_cast<char*>(buf.data()), 5) == "world");
  CHECK(*s.get_range("k", 9, buf, "") == 2);  // short only at the end
  CHECK(s.get_range("k", 11, buf, "").code() == Errc::kRangeNotSatisfiable);
  CHECK(s.get_range("k", 0, buf, "other").code() == Errc::kPreconditionFailed);
  CHECK(s.get_range("nope", 0, buf, "").code() == Errc::kNotFound);
  const std::string etag2 = s.put_object("k", "changed");
  CHECK(etag2 != etag);
  CHECK(s.get_range("k", 0, buf, etag).code() == Errc::kPreconditionFailed);
  const ObjectStoreCounters c = s.counters();
  CHECK(c.get_requests == 6);
  CHECK(c.head_requests == 2);
  CHECK(c.bytes_read == 7);
  CHECK(c.errors == 5);
  CHECK(s.delete_object("k"));
  CHECK(s.head("k").code() == Errc::kNotFound);
}

TEST_CASE("memory store lists like ListObjectsV2", "[support]") {
  MemoryObjectStore s;
  for (const char* k : {"a.txt", "dir/x", "dir/y", "dir/sub/1", "dir/sub/2", "dir/sub2/3", "dir!",
                        "dir0", "e/f/g/h", "z"}) {
    s.put_object(k, k);
  }
  using V = std::vector<std::string>;
  CHECK(list_all(s, "", "/", 1000) == V{"a.txt", "dir!", "dir/", "dir0", "e/", "z"});
  CHECK(list_all(s, "dir/", "/", 1000) == V{"dir/sub/", "dir/sub2/", "dir/x", "dir/y"});
  CHECK(list_all(s, "dir/sub", "/", 1000) == V{"dir/sub/", "dir/sub2/"});
  CHECK(list_all(s, "", "", 1000).size() == 10);
  CHECK(list_all(s, "nothing/", "/", 1000).empty());
  // Paging: the same answer whatever the page size; max_keys counts keys and prefixes.
  for (int max_keys : {1, 2, 3, 5}) {
    INFO("max_keys " << max_keys);
    int pages = 0;
    CHECK(list_all(s, "", "/", max_keys, &pages) == V{"a.txt", "dir!", "dir/", "dir0", "e/", "z"});
    CHECK(pages == (6 + max_keys - 1) / max_keys);
    CHECK(list_all(s, "dir/", "/", max_keys) == V{"dir/sub/", "dir/sub2/", "dir/x", "dir/y"});
    CHECK(list_all(s, "", "", max_keys).size() == 10);
  }
  Result<ListPage> page = s.list({"dir/", "/", "", 1000});
  REQUIRE(page.is_ok());
  REQUIRE(page->objects.size() == 2);
  CHECK(page->objects[0].size == 5);
  CHECK(page->objects[0].etag == MemoryObjectStore::md5_hex(to_bytes("dir/x")));
  CHECK(s.list({"", "/", "garbage", 10}).code() == Errc::kInvalidArgument);
  // start_after: keys after it; a common prefix it lies inside is named again (as S3 does).
  for (int max_keys : {1, 1000}) {
    CHECK(list_all(s, "", "/", max_keys, nullptr, "dir/sub/1") == V{"dir/", "dir0", "e/", "z"});
    CHECK(list_all(s, "dir/", "/", max_keys, nullptr, "dir/sub/2") ==
          V{"dir/sub2/", "dir/x", "dir/y"});
    CHECK(list_all(s, "dir/", "/", max_keys, nullptr, "dir/sub/1") ==
          V{"dir/sub/", "dir/sub2/", "dir/x", "dir/y"});
    CHECK(list_all(s, "dir/", "/", max_keys, nullptr, "a") == list_all(s, "dir/", "/", 1000));
    CHECK(list_all(s, "dir/", "/", max_keys, nullptr, "dir/z").empty());
  }
}

TEST_CASE("fault injecting store fails, truncates and counts", "[support]") {
  MemoryObjectStore inner;
  inner.put_object("k", std::string(100, 'x'));
  FaultInjectingStore s(inner);
  using Op = FaultInjectingStore::Op;
  std::vector<std::byte> buf(10);
  s.fail_next(Op::kGetRange, 2, Status(Errc::kIo, "boom"));
  CHECK(s.get_range("k", 0, buf, "").code() == Errc::kIo);
  CHECK(s.get_range("k", 10, buf, "").code() == Errc::kIo);
  CHECK(*s.get_range("k", 10, buf, "") == 10);
  CHECK(s.head("k").is_ok());  // other operations unaffected
  s.truncate_next(1, 3);
  CHECK(*s.get_range("k", 20, buf, "") == 3);
  CHECK(*s.get_range("k", 20, buf, "") == 10);
  s.fail_always(Op::kList, Status(Errc::kUnavailable, "down"));
  CHECK(s.list({}).code() == Errc::kUnavailable);
  CHECK(s.list({}).code() == Errc::kUnavailable);
  s.clear_faults();
  CHECK(s.list({}).is_ok());
  CHECK(s.call_count(Op::kGetRange) == 5);
  CHECK(s.call_count(Op::kList) == 3);
  CHECK(s.get_count("k") == 5);
  CHECK(s.get_count("k", 10) == 2);
  CHECK(s.get_count("k", 20) == 2);
  CHECK(s.bytes_returned() == 23);
  CHECK(s.calls()[0].result == Errc::kIo);
  CHECK(s.in_flight() == 0);
  int hooked = 0;
  s.set_before_get([&](std::string_view key, uint64_t offset) {
    CHECK(key == "k");
    CHECK(offset == 5);
    ++hooked;
  });
  CHECK(s.get_range("k", 5, buf, "").is_ok());
  CHECK(hooked == 1);
  s.clear_calls();
  CHECK(s.calls().empty());
}

TEST_CASE("fake clock moves only when told", "[support]") {
  FakeClock c;
  const auto t0 = c.now();
  const auto w0 = c.wall_now();
  CHECK(c.now() == t0);
  c.advance(5s);
  CHECK(c.now() - t0 == 5s);
  CHECK(c.wall_now() - w0 == 5s);
  c.sleep_for(250ms);
  CHECK(c.now() - t0 == 5250ms);
  CHECK(c.slept() == 250ms);
  c.set_wall(std::chrono::system_clock::time_point(std::chrono::seconds(42)));
  CHECK(c.wall_now().time_since_epoch() == 42s);
}
