// The cache server (server/cache_server.h) and the client tier (cache/remote_cache.h) over
// real loopback HTTP, against an in-memory bucket.
#include "server/cache_server.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "cache/memory_cache.h"
#include "cache/remote_cache.h"
#include "cache/remote_protocol.h"
#include "cache/ssd_cache.h"
#include "common/crc32c.h"
#include "support/fake_clock.h"
#include "support/memory_object_store.h"
#include "support/temp_dir.h"
#include "support/test_data.h"
#include "unit/http/test_http_server.h"

using namespace warmfs;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t kChunk = kDefaultChunkSize;
const char* const kToken = "test-token-123";

// A server over an in-memory bucket (memory tier only), listening on 127.0.0.1.
struct ServerSetup {
  explicit ServerSetup(std::string token = kToken, Clock& clock = SystemClock::instance())
      : bucket("data", clock), memory({.capacity_bytes = 256ull << 20}) {
    CacheServerOptions o;
    o.token = std::move(token);
    server = std::make_unique<CacheServer>(std::map<std::string, ObjectStore*>{{"data", &bucket}},
                                           memory, nullptr, clock, o);
    REQUIRE(server->start(http::ServerOptions{}).is_ok());
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server->port()); }

  MemoryObjectStore bucket;
  MemoryCache memory;
  std::unique_ptr<CacheServer> server;
};

std::unique_ptr<RemoteCache> client(std::vector<std::string> urls, std::string token = kToken,
                                    Clock& clock = SystemClock::instance()) {
  RemoteCacheOptions o;
  o.servers = std::move(urls);
  o.token = std::move(token);
  o.initial_backoff = 200ms;
  o.max_backoff = 200ms;
  auto r = RemoteCache::create(o, clock);
  REQUIRE(r.is_ok());
  return std::move(*r);
}

bool same_bytes(const ChunkPtr& c, const std::vector<std::byte>& data, uint64_t index) {
  const uint64_t off = index * kChunk;
  const uint64_t len = std::min<uint64_t>(kChunk, data.size() - off);
  return c && c->bytes.size() == len && std::memcmp(c->bytes.data(), data.data() + off, len) == 0;
}

}  // namespace

TEST_CASE("rendezvous hashing spreads chunks evenly and moves only the new server's share",
          "[remote]") {
  const std::vector<std::string> three = {"http://a:1", "http://b:1", "http://c:1"};
  std::vector<std::string> four = three;
  four.push_back("http://d:1");
  auto owner = [](const std::vector<std::string>& servers, const ChunkKey& k) {
    size_t best = 0;
    for (size_t i = 1; i < servers.size(); ++i) {
      if (rendezvous_weight(servers[i], k) > rendezvous_weight(servers[best], k)) best = i;
    }
    return best;
  };
  std::vector<int> counts(3, 0);
  int moved = 0, moved_elsewhere = 0;
  constexpr int kN = 6000;
  for (int i = 0; i < kN; ++i) {
    ChunkKey k{"b", "file-" + std::to_string(i / 10), "etag", static_cast<uint64_t>(i % 10)};
    const size_t o3 = owner(three, k);
    const size_t o4 = owner(four, k);
    ++counts[o3];
    if (o3 != o4) {
      ++moved;
      if (o4 != 3) ++moved_elsewhere;
    }
  }
  for (int c : counts) {
    CHECK(c > kN / 3 * 0.9);
    CHECK(c < kN / 3 * 1.1);
  }
  CHECK(moved > kN / 4 * 0.85);
  CHECK(moved < kN / 4 * 1.15);
  CHECK(moved_elsewhere == 0);
  // The client agrees with the weights.
  auto rc = client(three);
  ChunkKey k{"b", "x", "e", 7};
  CHECK(rc->owner_of(k) == owner(three, k));
}

TEST_CASE("a chunk read through the server is fetched once, then served from its cache",
          "[remote]") {
  ServerSetup s;
  const auto data = random_bytes(3 * kChunk + 1234, 7);
  const std::string etag = s.bucket.put_object("obj", data);
  auto rc = client({s.url()});
  for (uint64_t i = 0; i < 4; ++i) CHECK(same_bytes(rc->get({"data", "obj", etag, i}), data, i));
  const auto after_first = s.bucket.counters();
  CHECK(after_first.bytes_read == data.size());
  for (uint64_t i = 0; i < 4; ++i) CHECK(same_bytes(rc->get({"data", "obj", etag, i}), data, i));
  CHECK(s.bucket.counters().bytes_read == data.size());
  const auto c = rc->remote_counters();
  CHECK(c.miss_bytes == data.size());
  CHECK(c.hit_bytes == data.size());
  CHECK(c.errors == 0);
  const auto sc = s.server->counters();
  CHECK(sc.bytes_served == 2 * data.size());
  CHECK(sc.hit_bytes == data.size());
  // put() never reaches the server.
  rc->put({"data", "other", "e", 0}, make_chunk(std::vector<std::byte>(10)));
  CHECK(s.server->counters().chunk_requests == 8);
}

TEST_CASE("concurrent identical misses make one bucket request per chunk", "[remote]") {
  ServerSetup s;
  const auto data = random_bytes(2 * kChunk, 11);
  const std::string etag = s.bucket.put_object("obj", data);
  std::vector<std::unique_ptr<RemoteCache>> clients;
  for (int i = 0; i < 6; ++i) clients.push_back(client({s.url()}));
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 12; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 2; ++i) {
        if (same_bytes(clients[t % 6]->get({"data", "obj", etag, i}), data, i)) ++good;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(good == 24);
  CHECK(s.bucket.counters().get_requests == 2);
  CHECK(s.bucket.counters().head_requests == 1);
}

TEST_CASE("no token, a wrong token, another bucket or another version: refused, nothing served",
          "[remote]") {
  ServerSetup s;
  const auto data = random_bytes(kChunk, 3);
  const std::string etag = s.bucket.put_object("obj", data);

  auto none = client({s.url()}, "");
  CHECK(none->get({"data", "obj", etag, 0}) == nullptr);
  CHECK(none->info(0).code() == Errc::kAccessDenied);
  auto wrong = client({s.url()}, "not-the-token");
  CHECK(wrong->get({"data", "obj", etag, 0}) == nullptr);
  CHECK(wrong->remote_counters().errors == 1);
  CHECK(s.server->counters().unauthorized == 3);

  auto good = client({s.url()});
  CHECK(good->get({"other-bucket", "obj", etag, 0}) == nullptr);
  CHECK(good->get({"data", "obj", "0123456789abcdef0123456789abcdef", 0}) == nullptr);
  CHECK(good->get({"data", "missing", etag, 0}) == nullptr);
  CHECK(good->get({"data", "obj", etag, 5}) == nullptr);
  const auto c = good->remote_counters();
  CHECK(c.refused == 4);
  CHECK(c.errors == 0);  // refusals are not server failures
  const auto sc = s.server->counters();
  CHECK(sc.bytes_served == 0);
  CHECK(sc.not_found == 2);
  CHECK(sc.precondition_failed == 1);
  CHECK(sc.range_errors == 1);
  CHECK(s.bucket.counters().get_requests == 0);  // nothing was fetched for them
  // And the right request works.
  CHECK(same_bytes(good->get({"data", "obj", etag, 0}), data, 0));
  auto info = good->info(0);
  REQUIRE(info.is_ok());
  CHECK(info->buckets == std::vector<std::string>{"data"});
  CHECK(info->chunk_size == kChunk);
}

TEST_CASE("a replaced object is no longer served once its version check expires", "[remote]") {
  FakeClock clock;
  ServerSetup s(kToken, clock);
  const auto v1 = random_bytes(kChunk, 1);
  const std::string e1 = s.bucket.put_object("obj", v1);
  auto rc = client({s.url()});
  CHECK(same_bytes(rc->get({"data", "obj", e1, 0}), v1, 0));
  const auto v2 = random_bytes(kChunk, 2);
  const std::string e2 = s.bucket.put_object("obj", v2);
  // Within the interval the cached v1 is still served to who names v1 ...
  CHECK(same_bytes(rc->get({"data", "obj", e1, 0}), v1, 0));
  // ... a client naming v2 makes the server look again (after a second) and serves v2.
  clock.advance(2s);
  CHECK(same_bytes(rc->get({"data", "obj", e2, 0}), v2, 0));
  // After the interval, v1 is refused even though its chunk is cached.
  clock.advance(61s);
  CHECK(rc->get({"data", "obj", e1, 0}) == nullptr);
  CHECK(s.server->counters().precondition_failed >= 1);
}

TEST_CASE("a server that is down is skipped for a backoff and used again once back", "[remote]") {
  const int port = testing::unused_local_port();
  auto rc = client({"http://127.0.0.1:" + std::to_string(port)});
  ChunkKey k{"data", "obj", "e", 0};
  CHECK(rc->get(k) == nullptr);
  CHECK(rc->remote_counters().errors == 1);
  CHECK_FALSE(rc->remote_counters().servers[0].up);
  // In the backoff: no request at all.
  CHECK(rc->get(k) == nullptr);
  CHECK(rc->remote_counters().errors == 1);
  CHECK(rc->remote_counters().fallback_chunks == 2);
}

TEST_CASE("bytes that fail their CRC32C are a server failure, never a chunk", "[remote]") {
  const std::string body(1000, 'x');
  testing::TestHttpServer bad([&](const testing::ServerRequest&) {
    testing::ServerReply r;
    r.body = body;
    r.headers.emplace_back(remote::kCrcHeader, remote::format_crc(crc32c(body) ^ 1));
    return r;
  });
  auto rc = client({bad.url()});
  CHECK(rc->get({"data", "obj", "e", 0}) == nullptr);
  CHECK(rc->remote_counters().errors == 1);
  // A good CRC from the same server is accepted (after the backoff). The body is over half a
  // chunk (kept in its buffer, not copied) and ends in a partial checksum block: its CRCs,
  // taken as the bytes arrive, are the chunk's.
  std::string good_body(40 * kCrcBlockBytes + 1234, '\0');
  for (size_t i = 0; i < good_body.size(); ++i) good_body[i] = static_cast<char>(i * 131 + 7);
  // Chunk 1 is a short last chunk (copied out of the buffer, its CRCs kept).
  testing::TestHttpServer good([&](const testing::ServerRequest& req) {
    testing::ServerReply r;
    r.body = req.target.find("index=1") != std::string::npos ? body : good_body;
    r.headers.emplace_back(remote::kCrcHeader, remote::format_crc(crc32c(r.body)));
    r.headers.emplace_back(remote::kSourceHeader, "hit");
    CHECK(req.header("authorization") == std::string("Bearer ") + kToken);
    return r;
  });
  auto ok = client({good.url()});
  ChunkPtr c = ok->get({"data", "obj", "e", 0});
  REQUIRE(c);
  CHECK(c->bytes.size() == good_body.size());
  CHECK(c->crc32c == crc32c(good_body));
  REQUIRE(c->block_crcs.size() == crc_block_count(good_body.size()));
  CHECK(c->block_crcs[40] == crc32c(std::string_view(good_body).substr(40 * kCrcBlockBytes)));
  CHECK(combine_block_crcs(c->block_crcs, good_body.size()) == c->crc32c);
  CHECK(chunk_intact(*c));
  CHECK(ok->remote_counters().hit_bytes == good_body.size());
  ChunkPtr last = ok->get({"data", "obj", "e", 1});
  REQUIRE(last);
  CHECK(last->bytes.size() == body.size());
  CHECK(last->crc32c == crc32c(body));
  CHECK(last->block_crcs.size() == 1);
  CHECK(chunk_intact(*last));
}

TEST_CASE("cache server URLs are checked", "[remote]") {
  RemoteCacheOptions o;
  o.servers = {"ftp://x"};
  CHECK(RemoteCache::create(o, SystemClock::instance()).code() == Errc::kInvalidArgument);
  o.servers = {"http://a:1/", "http://a:1"};
  CHECK(RemoteCache::create(o, SystemClock::instance()).code() == Errc::kInvalidArgument);
  o.servers = {};
  CHECK(RemoteCache::create(o, SystemClock::instance()).code() == Errc::kInvalidArgument);
  CHECK(remote::normalize_base_url("https://h:9/") == "https://h:9");
  CHECK(remote::normalize_base_url("http://h/path").empty());
  CHECK(remote::parse_crc("0000000a") == 10u);
  CHECK_FALSE(remote::parse_crc("xyz").has_value());
}

TEST_CASE("a mount's read path reads through the server", "[remote]") {
  ServerSetup s;
  const auto data = random_bytes(5 * kChunk + 77, 5);
  const std::string etag = s.bucket.put_object("obj", data);
  MemoryObjectStore own("data");
  own.put_object("obj", data);
  MemoryCache memory({.capacity_bytes = 64ull << 20});
  auto rc = client({s.url()});
  TieredCache tiers(memory, *rc);
  ReadPath path(own, tiers, "data", ReadaheadOptions{}, &memory);
  auto reader = path.open({"obj", etag, data.size()});
  std::vector<std::byte> buf(data.size());
  auto n = reader->read(0, buf);
  REQUIRE(n.is_ok());
  CHECK(*n == data.size());
  CHECK(buf == data);
  CHECK(own.counters().bytes_read == 0);
  CHECK(s.bucket.counters().bytes_read == data.size());
}

TEST_CASE("a range of a chunk is served alone, checked, and from an old server's whole chunk",
          "[remote][range]") {
  ServerSetup s;
  const auto data = random_bytes(2 * kChunk + 5000, 13);
  const std::string etag = s.bucket.put_object("obj", data);
  auto rc = client({s.url()});
  const ChunkKey k1{"data", "obj", etag, 1};
  std::vector<std::byte> out(4096);
  // A miss at the server: it fetches the chunk whole, then answers only the range.
  REQUIRE(rc->read_range(k1, 70'000, out));
  CHECK(std::memcmp(out.data(), data.data() + kChunk + 70'000, out.size()) == 0);
  // Held now: the range again, served from the server's memory.
  REQUIRE(rc->read_range(k1, 123, out));
  CHECK(std::memcmp(out.data(), data.data() + kChunk + 123, out.size()) == 0);
  // The short last chunk, to its end.
  std::vector<std::byte> tail(1000);
  REQUIRE(rc->read_range({"data", "obj", etag, 2}, 4000, tail));
  CHECK(std::memcmp(tail.data(), data.data() + 2 * kChunk + 4000, tail.size()) == 0);
  const auto sc = s.server->counters();
  CHECK(sc.bytes_served == 2 * out.size() + tail.size());  // ranges, not chunks, went out
  CHECK(rc->counters().range_hits == 3);
  CHECK(rc->remote_counters().errors == 0);
  // Past the end of the chunk: refused (a miss), the server is fine.
  CHECK_FALSE(rc->read_range({"data", "obj", etag, 2}, 4500, tail));
  CHECK(rc->remote_counters().refused == 1);
  CHECK(rc->remote_counters().errors == 0);

  // A server that predates ranges answers the whole chunk: the range is taken from it.
  const std::string body(20'000, 'y');
  testing::TestHttpServer old([&](const testing::ServerRequest&) {
    testing::ServerReply r;
    r.body = body;
    r.body[10'000] = 'z';
    r.headers.emplace_back(remote::kCrcHeader, remote::format_crc(crc32c(r.body)));
    return r;
  });
  auto oc = client({old.url()});
  std::vector<std::byte> two(2);
  REQUIRE(oc->read_range({"data", "obj", "e", 0}, 9'999, two));
  CHECK(two[0] == std::byte{'y'});
  CHECK(two[1] == std::byte{'z'});
}

TEST_CASE("range bytes that fail their CRC32C, or come from elsewhere, are a server failure",
          "[remote][range]") {
  const std::string body(4096, 'x');
  int mode = 0;
  testing::TestHttpServer bad([&](const testing::ServerRequest&) {
    testing::ServerReply r;
    r.body = body;
    const uint32_t crc = crc32c(body);
    r.headers.emplace_back(remote::kCrcHeader, remote::format_crc(mode == 0 ? crc ^ 1 : crc));
    r.headers.emplace_back(remote::kOffsetHeader, mode == 1 ? "0" : "8192");
    return r;
  });
  std::vector<std::byte> out(4096);
  for (mode = 0; mode < 2; ++mode) {
    auto rc = client({bad.url()});
    CHECK_FALSE(rc->read_range({"data", "obj", "e", 0}, 8192, out));
    CHECK(rc->remote_counters().errors == 1);
  }
  mode = 2;
  auto rc = client({bad.url()});
  REQUIRE(rc->read_range({"data", "obj", "e", 0}, 8192, out));
  CHECK(out[0] == std::byte{'x'});
}

TEST_CASE("a server with an SSD tier answers a range from only its blocks", "[remote][range]") {
  testing::TempDir tmp;
  SsdCacheOptions so;
  so.dir = tmp.cache();
  so.capacity_bytes = 64 << 20;
  so.region_bytes = 16 << 20;
  auto ssd = SsdCache::open(so, SystemClock::instance());
  REQUIRE(ssd.is_ok());
  MemoryObjectStore bucket("data");
  const auto data = random_bytes(2 * kChunk, 17);
  const std::string etag = bucket.put_object("obj", data);
  // The chunk is in the SSD tier only (the server's memory is empty).
  (*ssd)->put({"data", "obj", etag, 1},
              make_chunk(std::vector<std::byte>(data.begin() + kChunk, data.end())));
  (*ssd)->flush();
  MemoryCache memory({.capacity_bytes = 64 << 20});
  CacheServerOptions o;
  o.token = kToken;
  CacheServer server(std::map<std::string, ObjectStore*>{{"data", &bucket}}, memory, ssd->get(),
                     SystemClock::instance(), o);
  REQUIRE(server.start(http::ServerOptions{}).is_ok());
  auto rc = client({"http://127.0.0.1:" + std::to_string(server.port())});
  std::vector<std::byte> out(4096);
  REQUIRE(rc->read_range({"data", "obj", etag, 1}, 300'000, out));
  CHECK(std::memcmp(out.data(), data.data() + kChunk + 300'000, out.size()) == 0);
  CHECK((*ssd)->counters().range_hits == 1);
  CHECK(bucket.counters().bytes_read == 0);
  CHECK(memory.counters().used_bytes == 0);  // no whole chunk was read for it
}
