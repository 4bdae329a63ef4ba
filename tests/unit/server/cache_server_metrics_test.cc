// The cache server's answers counted by HTTP status and timed (for /metrics), through
// handle() without sockets.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cache/memory_cache.h"
#include "cache/remote_protocol.h"
#include "server/cache_server.h"
#include "support/fake_clock.h"
#include "support/memory_object_store.h"
#include "support/test_data.h"

using namespace warmfs;

TEST_CASE("cache server answers are counted by status and timed", "[server][metrics]") {
  FakeClock clock;
  MemoryObjectStore bucket("data", clock);
  MemoryCache memory({.capacity_bytes = 64ull << 20});
  CacheServerOptions o;
  o.token = "t";
  CacheServer server(std::map<std::string, ObjectStore*>{{"data", &bucket}}, memory, nullptr, clock,
                     o);
  const std::string etag = bucket.put_object("obj", random_bytes(1000, 3));
  auto request = [](std::string path, std::vector<std::pair<std::string, std::string>> query,
                    bool token) {
    http::ServerRequest r;
    r.method = "GET";
    r.path = std::move(path);
    r.query = std::move(query);
    if (token) r.headers.emplace_back("authorization", "Bearer t");
    r.peer = "127.0.0.1:1";
    return r;
  };
  CHECK(server.requests_by_status().empty());
  CHECK(server.handle(request(remote::kHealthPath, {}, false)).status == 200);
  CHECK(server.handle(request(remote::kInfoPath, {}, false)).status == 401);
  CHECK(server.handle(request("/nowhere", {}, true)).status == 404);
  const auto chunk =
      request(remote::kChunkPath,
              {{"bucket", "data"}, {"key", "obj"}, {"etag", etag}, {"index", "0"}}, true);
  CHECK(server.handle(chunk).status == 200);
  CHECK(server.handle(chunk).status == 200);
  const std::vector<std::pair<int, uint64_t>> want = {{200, 3}, {401, 1}, {404, 1}};
  CHECK(server.requests_by_status() == want);
  CHECK(server.request_latency_us().count() == 5);
  CHECK(server.counters().chunk_requests == 2);
}
