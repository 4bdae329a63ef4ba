// S3ObjectStore against the in-process TestHttpServer playing S3: request shape, signatures,
// status mapping and retries (with a fake clock, so backoff never sleeps).
#include "objstore/s3_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "objstore/sigv4.h"
#include "objstore/time_format.h"
#include "objstore/xml.h"
#include "unit/http/test_http_server.h"
#include "unit/objstore/s3_test_support.h"

using warmfs::Errc;
using warmfs::ListRequest;
using warmfs::S3Config;
using warmfs::S3ObjectStore;
using warmfs::testing::ServerReply;
using warmfs::testing::ServerRequest;
using warmfs::testing::TestHttpServer;

namespace {

// Time stands still unless slept through; sleeps are recorded.
class FakeClock final : public warmfs::Clock {
 public:
  std::chrono::steady_clock::time_point now() const override {
    std::lock_guard lock(mu_);
    return std::chrono::steady_clock::time_point() + elapsed_;
  }
  std::chrono::system_clock::time_point wall_now() const override {
    std::lock_guard lock(mu_);
    return std::chrono::system_clock::time_point(std::chrono::seconds(1715938215)) +
           std::chrono::duration_cast<std::chrono::system_clock::duration>(elapsed_);
  }
  void sleep_for(std::chrono::nanoseconds d) override {
    std::lock_guard lock(mu_);
    elapsed_ += d;
    sleeps_.push_back(d);
  }
  std::vector<std::chrono::nanoseconds> sleeps() const {
    std::lock_guard lock(mu_);
    return sleeps_;
  }

 private:
  mutable std::mutex mu_;  // protects elapsed_ and sleeps_
  std::chrono::nanoseconds elapsed_{0};
  std::vector<std::chrono::nanoseconds> sleeps_;
};

using warmfs::testing::config_for;
using warmfs::testing::kKeyId;
using warmfs::testing::kSecret;
using warmfs::testing::make_store;

// "bytes=a-b" from a request.
std::pair<uint64_t, uint64_t> parse_range(const ServerRequest& req) {
  std::string r = req.header("range");
  size_t dash = r.find('-');
  return {std::stoull(r.substr(6, dash - 6)), std::stoull(r.substr(dash + 1))};
}

// Serves ranges of `object` like S3 does.
ServerReply serve_range(const ServerRequest& req, const std::string& object) {
  ServerReply r;
  auto [first, last] = parse_range(req);
  if (first >= object.size()) {
    r.status = 416;
    r.body =
        "<Error><Code>InvalidRange</Code><Message>The requested range is not "
        "satisfiable</Message></Error>";
    return r;
  }
  last = std::min<uint64_t>(last, object.size() - 1);
  r.status = 206;
  r.body = object.substr(first, last - first + 1);
  r.headers = {{"Content-Range", fmt::format("bytes {}-{}/{}", first, last, object.size())},
               {"ETag", "\"etag1\""}};
  return r;
}

ServerReply error_reply(int status, const std::string& code, const std::string& message) {
  ServerReply r;
  r.status = status;
  r.headers = {{"Content-Type", "application/xml"}};
  r.body = fmt::format(
      "<?xml version=\"1.0\"?>\n<Error><Code>{}</Code><Message>{}</Message>"
      "<AWSAccessKeyId>{}</AWSAccessKeyId><RequestId>R1</RequestId></Error>",
      code, message, kKeyId);
  return r;
}

std::string as_string(const std::vector<std::byte>& buf, size_t n) {
  return std::string(reinterpret_cast<const char*>(buf.data()), n);
}

// Re-signs what the server received and checks it matches the Authorization sent: proves
// the signature covers the path, query and headers as they arrived.
void check_signature(const ServerRequest& req) {
  const std::string auth = req.header("authorization");
  REQUIRE_THAT(auth,
               Catch::StartsWith(fmt::format(
                   "AWS4-HMAC-SHA256 Credential={}/20240517/us-east-1/s3/aws4_request", kKeyId)));
  CHECK(req.header("x-amz-content-sha256") == "UNSIGNED-PAYLOAD");
  warmfs::testing::check_resigned(req);
}

}  // namespace

TEST_CASE("get_range sends a signed ranged GET and returns the bytes", "[objstore]") {
  const std::string object = "0123456789abcdefghijklmnopqrstuvwxyz";
  TestHttpServer server([&](const ServerRequest& req) { return serve_range(req, object); });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);

  std::vector<std::byte> buf(10);
  auto n = store->get_range("dir/my file+1.txt", 10, buf, "etag1");
  REQUIRE(n.is_ok());
  CHECK(*n == 10);
  CHECK(as_string(buf, 10) == "abcdefghij");

  auto seen = server.requests();
  REQUIRE(seen.size() == 1);
  const ServerRequest& req = seen[0];
  CHECK(req.method == "GET");
  CHECK(req.target == "/bkt/dir/my%20file%2B1.txt");
  CHECK(req.header("range") == "bytes=10-19");
  CHECK(req.header("if-match") == "\"etag1\"");
  CHECK(req.header("host") == server.url().substr(7));
  CHECK(req.header("x-amz-content-sha256") == "UNSIGNED-PAYLOAD");
  CHECK(req.header("x-amz-date") == "20240517T093015Z");
  check_signature(req);

  auto c = store->counters();
  CHECK(c.get_requests == 1);
  CHECK(c.bytes_read == 10);
  CHECK(c.retries == 0);
  CHECK(c.errors == 0);
}

TEST_CASE("get_range near and past the end of the object", "[objstore]") {
  const std::string object(100, 'z');
  TestHttpServer server([&](const ServerRequest& req) { return serve_range(req, object); });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  std::vector<std::byte> buf(50);
  auto tail = store->get_range("k", 90, buf, "");
  REQUIRE(tail.is_ok());
  CHECK(*tail == 10);
  auto past = store->get_range("k", 100, buf, "");
  REQUIRE(past.is_ok());
  CHECK(*past == 0);
  auto far = store->get_range("k", 5000, buf, "");
  REQUIRE(far.is_ok());
  CHECK(*far == 0);
  CHECK(store->counters().retries == 0);
  CHECK(store->counters().errors == 0);
}

TEST_CASE("5xx is retried with backoff until it succeeds", "[objstore]") {
  const std::string object = "hello object";
  std::atomic<int> calls{0};
  TestHttpServer server([&](const ServerRequest& req) {
    if (++calls <= 2) return error_reply(500, "InternalError", "We encountered an internal error.");
    return serve_range(req, object);
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  std::vector<std::byte> buf(5);
  auto n = store->get_range("k", 0, buf, "");
  REQUIRE(n.is_ok());
  CHECK(*n == 5);
  CHECK(as_string(buf, 5) == "hello");
  auto c = store->counters();
  CHECK(c.retries == 2);
  CHECK(c.errors == 0);
  CHECK(c.get_requests == 1);
  CHECK(calls == 3);
  auto sleeps = clock.sleeps();
  REQUIRE(sleeps.size() == 2);
  CHECK(sleeps[0] <= std::chrono::milliseconds(100));  // full jitter under base * 2^0
  CHECK(sleeps[1] <= std::chrono::milliseconds(200));
  // Each attempt was signed afresh (the clock moved by the backoff).
  for (const auto& req : server.requests()) check_signature(req);
}

TEST_CASE("503 SlowDown and 429 are retried", "[objstore]") {
  std::atomic<int> calls{0};
  TestHttpServer server([&](const ServerRequest&) {
    int n = ++calls;
    if (n == 1) return error_reply(503, "SlowDown", "Please reduce your request rate.");
    if (n == 2) return error_reply(429, "TooManyRequests", "Slow down");
    ServerReply r;
    r.headers = {{"ETag", "\"e\""}, {"Last-Modified", "Fri, 17 May 2024 09:30:15 GMT"}};
    r.content_length = 42;
    return r;
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  auto info = store->head("a/b");
  REQUIRE(info.is_ok());
  CHECK(info->key == "a/b");
  CHECK(info->size == 42);
  CHECK(info->etag == "e");
  CHECK(info->mtime_sec == 1715938215);
  CHECK(store->counters().retries == 2);
  CHECK(store->counters().head_requests == 1);
}

TEST_CASE("a truncated GET body is retried", "[objstore]") {
  const std::string object(1000, 'q');
  std::atomic<int> calls{0};
  SECTION("connection closed before Content-Length") {
    TestHttpServer server([&](const ServerRequest& req) {
      ServerReply r = serve_range(req, object);
      if (++calls == 1) {
        r.content_length = r.body.size();
        r.body.resize(r.body.size() / 2);
        r.close = true;
      }
      return r;
    });
    FakeClock clock;
    auto store = make_store(config_for(server.url()), clock);
    std::vector<std::byte> buf(100);
    auto n = store->get_range("k", 0, buf, "");
    REQUIRE(n.is_ok());
    CHECK(*n == 100);
    CHECK(store->counters().retries == 1);
    CHECK(store->counters().bytes_read == 100);
  }
  SECTION("body shorter than Content-Range promises") {
    TestHttpServer server([&](const ServerRequest& req) {
      ServerReply r = serve_range(req, object);
      if (++calls == 1) r.body.resize(60);  // Content-Length 60, Content-Range says 100
      return r;
    });
    FakeClock clock;
    auto store = make_store(config_for(server.url()), clock);
    std::vector<std::byte> buf(100);
    auto n = store->get_range("k", 200, buf, "");
    REQUIRE(n.is_ok());
    CHECK(*n == 100);
    CHECK(store->counters().retries == 1);
  }
  SECTION("always truncated: kIo, never short bytes") {
    TestHttpServer server([&](const ServerRequest& req) {
      ServerReply r = serve_range(req, object);
      r.body.resize(10);
      return r;
    });
    FakeClock clock;
    auto store = make_store(config_for(server.url()), clock);
    std::vector<std::byte> buf(100);
    auto n = store->get_range("k", 0, buf, "");
    REQUIRE_FALSE(n.is_ok());
    CHECK(n.code() == Errc::kIo);
    CHECK_THAT(n.status().message(), Catch::Contains("truncated"));
    CHECK(store->counters().bytes_read == 0);
  }
}

TEST_CASE(
    "with If-Match, a GET cut short resumes after what it brought, reporting progress and bytes",
    "[objstore]") {
  std::string object(300000, '\0');
  for (size_t i = 0; i < object.size(); ++i) object[i] = char('a' + (i * 7) % 26);
  std::atomic<int> calls{0};
  TestHttpServer server([&](const ServerRequest& req) {
    ServerReply r = serve_range(req, object);
    if (++calls == 1) {  // 120,000 bytes of the 200,000 asked for, then the connection drops
      r.content_length = r.body.size();
      r.body.resize(120000);
      r.close = true;
    }
    return r;
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  std::vector<std::byte> buf(200000);
  std::vector<size_t> seen;
  // The bytes shown as they land: what each offset held, how often it was shown.
  std::vector<char> shown(buf.size(), 0);
  std::vector<int> times(buf.size(), 0);
  uint64_t shown_end = 0;
  bool gap = false, same = true, before_landing = true;
  auto n = store->get_range_progress(
      "k", 50000, buf, "etag1", [&](size_t landed) { seen.push_back(landed); },
      [&](uint64_t at, std::span<const std::byte> bytes) {
        // Shown before progress reports them, with no gap (a retry may show a byte again).
        if (!seen.empty() && at + bytes.size() <= seen.back()) before_landing = false;
        if (at > shown_end) gap = true;
        shown_end = std::max<uint64_t>(shown_end, at + bytes.size());
        for (size_t i = 0; i < bytes.size(); ++i) {
          const char c = static_cast<char>(bytes[i]);
          if (times[at + i]++ > 0 && shown[at + i] != c) same = false;
          shown[at + i] = c;
        }
      });
  REQUIRE(n.is_ok());
  CHECK(*n == 200000);
  CHECK(std::memcmp(buf.data(), object.data() + 50000, buf.size()) == 0);
  CHECK(std::memcmp(shown.data(), object.data() + 50000, shown.size()) == 0);  // all shown
  CHECK(std::all_of(times.begin(), times.end(), [](int t) { return t == 1 || t == 2; }));
  CHECK_FALSE(gap);
  CHECK(same);
  CHECK(before_landing);
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[0].header("range") == "bytes=50000-249999");
  CHECK(reqs[1].header("range") == "bytes=170000-249999");  // after the 120,000 it had
  CHECK(reqs[1].header("if-match") == "\"etag1\"");
  REQUIRE_FALSE(seen.empty());
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());  // strictly increasing
  CHECK(seen.back() == 200000);
  CHECK(std::any_of(seen.begin(), seen.end(), [](size_t v) { return v > 0 && v <= 120000; }));
  CHECK(store->counters().bytes_read == 200000);
}

TEST_CASE("without If-Match, a GET cut short starts over and reports progress at the end",
          "[objstore]") {
  const std::string object(100000, 'z');
  std::atomic<int> calls{0};
  TestHttpServer server([&](const ServerRequest& req) {
    ServerReply r = serve_range(req, object);
    if (++calls == 1) {
      r.content_length = r.body.size();
      r.body.resize(30000);
      r.close = true;
    }
    return r;
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  std::vector<std::byte> buf(80000);
  std::vector<size_t> seen;
  auto n =
      store->get_range_progress("k", 0, buf, "", [&](size_t landed) { seen.push_back(landed); });
  REQUIRE(n.is_ok());
  CHECK(*n == 80000);
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 2);
  CHECK(reqs[1].header("range") == "bytes=0-79999");
  CHECK(seen == std::vector<size_t>{80000});
}

TEST_CASE("progress ignores an answer whose Content-Range starts elsewhere", "[objstore]") {
  const std::string object(100000, 'y');
  TestHttpServer server([&](const ServerRequest& req) {
    ServerReply r = serve_range(req, object);
    r.headers[0].second = "bytes 10-80009/100000";  // not where the request asked
    return r;
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  std::vector<std::byte> buf(80000);
  std::vector<size_t> seen;
  size_t shown = 0;
  auto n = store->get_range_progress(
      "k", 0, buf, "etag1", [&](size_t landed) { seen.push_back(landed); },
      [&](uint64_t, std::span<const std::byte> b) { shown += b.size(); });
  CHECK_FALSE(n.is_ok());
  CHECK(seen.empty());
  CHECK(shown == 0);  // nor are its bytes shown
}

TEST_CASE("persistent 500 fails with kIo after max attempts", "[objstore]") {
  std::atomic<int> calls{0};
  TestHttpServer server([&](const ServerRequest&) {
    ++calls;
    return error_reply(500, "InternalError", "We encountered an internal error.");
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  std::vector<std::byte> buf(10);
  auto n = store->get_range("k", 0, buf, "");
  REQUIRE_FALSE(n.is_ok());
  CHECK(n.code() == Errc::kIo);
  CHECK_THAT(n.status().message(), Catch::Contains("500 InternalError"));
  CHECK_THAT(n.status().message(), Catch::Contains("after 6 attempts"));
  CHECK(calls == 6);
  auto c = store->counters();
  CHECK(c.retries == 5);
  CHECK(c.errors == 1);
  auto sleeps = clock.sleeps();
  REQUIRE(sleeps.size() == 5);
  for (size_t i = 0; i < sleeps.size(); ++i) {
    CHECK(sleeps[i] <= std::chrono::milliseconds(100) * (1 << i));
  }
}

TEST_CASE("an unreachable endpoint is retried, then kUnavailable", "[objstore]") {
  FakeClock clock;
  auto cfg = config_for(fmt::format("http://127.0.0.1:{}", warmfs::testing::unused_local_port()));
  cfg.retry.max_attempts = 3;
  auto store = make_store(cfg, clock);
  auto r = store->head("k");
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.code() == Errc::kUnavailable);
  CHECK(store->counters().retries == 2);
}

TEST_CASE("S3 errors map to codes with one-line, secret-free messages", "[objstore]") {
  TestHttpServer server([&](const ServerRequest& req) {
    const std::string& t = req.target;
    if (t.find("/missing") != std::string::npos) {
      if (req.method == "HEAD") {
        ServerReply r;
        r.status = 404;
        return r;
      }
      return error_reply(404, "NoSuchKey", "The specified key does not exist.");
    }
    if (t.find("/nobucket") != std::string::npos)
      return error_reply(404, "NoSuchBucket", "The specified bucket does not exist");
    if (t.find("/denied") != std::string::npos) {
      if (req.method == "HEAD") {
        ServerReply r;
        r.status = 403;
        return r;
      }
      return error_reply(
          403, "SignatureDoesNotMatch",
          "The request signature we calculated does not match\nthe signature you provided.");
    }
    if (t.find("/changed") != std::string::npos)
      return error_reply(412, "PreconditionFailed",
                         "At least one of the pre-conditions you specified did not hold");
    if (t.find("/bad") != std::string::npos)
      return error_reply(400, "InvalidArgument", "Invalid argument");
    if (t.find("/teapot") != std::string::npos)
      return error_reply(418, "Teapot", "short and stout");
    return ServerReply{};
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  std::vector<std::byte> buf(10);

  auto check_message = [](const warmfs::Status& s) {
    CHECK(s.message().find('\n') == std::string::npos);
    CHECK(s.message().find(kSecret) == std::string::npos);
  };
  auto missing = store->get_range("missing", 0, buf, "");
  CHECK(missing.code() == Errc::kNotFound);
  CHECK_THAT(missing.status().message(), Catch::Contains("404 NoSuchKey"));
  CHECK_THAT(missing.status().message(), Catch::Contains("s3://bkt/missing"));
  auto head_missing = store->head("missing");
  CHECK(head_missing.code() == Errc::kNotFound);
  CHECK_THAT(head_missing.status().message(), Catch::Contains("404 Not Found"));
  auto nobucket = store->get_range("nobucket", 0, buf, "");
  CHECK(nobucket.code() == Errc::kNotFound);
  CHECK_THAT(nobucket.status().message(), Catch::Contains("NoSuchBucket"));

  auto denied = store->get_range("denied", 0, buf, "");
  CHECK(denied.code() == Errc::kAccessDenied);
  CHECK_THAT(denied.status().message(), Catch::Contains("403 SignatureDoesNotMatch"));
  check_message(denied.status());
  auto head_denied = store->head("denied");
  CHECK(head_denied.code() == Errc::kAccessDenied);
  CHECK_THAT(head_denied.status().message(), Catch::Contains("403 Forbidden"));

  auto changed = store->get_range("changed", 0, buf, "\"already-quoted\"");
  CHECK(changed.code() == Errc::kPreconditionFailed);
  CHECK(server.requests().back().header("if-match") == "\"already-quoted\"");
  CHECK(store->get_range("bad", 0, buf, "").code() == Errc::kInvalidArgument);
  CHECK(store->get_range("teapot", 0, buf, "").code() == Errc::kIo);
  CHECK(store->counters().retries == 0);
  for (const auto& s : {missing.status(), head_missing.status(), denied.status()}) check_message(s);
}

TEST_CASE("list sends ListObjectsV2 and decodes the page", "[objstore]") {
  TestHttpServer server([&](const ServerRequest& req) {
    if (req.target.find("prefix=broken") != std::string::npos) {
      ServerReply r;
      r.body = "<ListBucketResult><Contents><Key>x</Key>";
      return r;
    }
    ServerReply r;
    r.body =
        "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>"
        "<NextContinuationToken>tok/2=</NextContinuationToken>"
        "<Contents><Key>dir/a+b.txt</Key><Size>3</Size><ETag>\"e1\"</ETag>"
        "<LastModified>2024-05-17T09:30:15.000Z</LastModified></Contents>"
        "<CommonPrefixes><Prefix>dir/sub%20dir/</Prefix></CommonPrefixes></ListBucketResult>";
    return r;
  });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  ListRequest lr;
  lr.prefix = "dir/";
  lr.continuation_token = "tok/1=";
  lr.max_keys = 500;
  auto page = store->list(lr);
  REQUIRE(page.is_ok());
  REQUIRE(page->objects.size() == 1);
  CHECK(page->objects[0].key == "dir/a b.txt");
  CHECK(page->objects[0].etag == "e1");
  CHECK(page->common_prefixes == std::vector<std::string>{"dir/sub dir/"});
  CHECK(page->truncated);
  CHECK(page->next_token == "tok/2=");

  const ServerRequest req = server.requests().at(0);
  CHECK(req.target ==
        "/bkt?continuation-token=tok%2F1%3D&delimiter=%2F&encoding-type=url&list-type=2&"
        "max-keys=500&prefix=dir%2F");
  check_signature(req);
  CHECK(store->counters().list_requests == 1);

  // start-after, without a token (and ignored with one: the token already says where).
  ListRequest after;
  after.prefix = "dir/";
  after.start_after = "dir/\xc3\xa9t\xc3\xa9";
  REQUIRE(store->list(after).is_ok());
  CHECK(server.requests().at(1).target ==
        "/bkt?delimiter=%2F&encoding-type=url&list-type=2&max-keys=1000&prefix=dir%2F&"
        "start-after=dir%2F%C3%A9t%C3%A9");
  check_signature(server.requests().at(1));
  after.continuation_token = "tok/2=";
  REQUIRE(store->list(after).is_ok());
  CHECK_THAT(server.requests().at(2).target, !Catch::Contains("start-after"));

  ListRequest broken;
  broken.prefix = "broken";
  auto bad = store->list(broken);
  CHECK(bad.code() == Errc::kCorrupt);
  CHECK_THAT(bad.status().message(), Catch::Contains("LIST s3://bkt"));
}

TEST_CASE("anonymous stores send no signature", "[objstore]") {
  TestHttpServer server([](const ServerRequest&) {
    ServerReply r;
    r.content_length = 7;
    return r;
  });
  FakeClock clock;
  auto cfg = config_for(server.url());
  cfg.anonymous = true;
  cfg.credentials = {};
  auto store = make_store(cfg, clock);
  REQUIRE(store->head("public.txt").is_ok());
  auto req = server.requests().at(0);
  CHECK(req.header("authorization").empty());
  CHECK(req.header("x-amz-date").empty());
}

TEST_CASE("session tokens are sent and signed", "[objstore]") {
  TestHttpServer server([](const ServerRequest&) {
    ServerReply r;
    r.content_length = 1;
    return r;
  });
  FakeClock clock;
  auto cfg = config_for(server.url());
  cfg.credentials.session_token = "TOKEN+/=";
  auto store = make_store(cfg, clock);
  REQUIRE(store->head("k").is_ok());
  auto req = server.requests().at(0);
  CHECK(req.header("x-amz-security-token") == "TOKEN+/=");
  CHECK_THAT(req.header("authorization"), Catch::Contains("x-amz-security-token"));
}

TEST_CASE("create validates the config", "[objstore]") {
  FakeClock clock;
  S3Config c = config_for("http://127.0.0.1:1");
  SECTION("no bucket") {
    c.bucket.clear();
    CHECK(S3ObjectStore::create(c, clock).code() == Errc::kInvalidArgument);
  }
  SECTION("no credentials and not anonymous") {
    c.credentials = {};
    CHECK(S3ObjectStore::create(c, clock).code() == Errc::kInvalidArgument);
  }
  SECTION("bad endpoints") {
    for (const char* e : {"127.0.0.1:5000", "ftp://host", "http://", "http://host/path"}) {
      c.endpoint = e;
      INFO(e);
      CHECK(S3ObjectStore::create(c, clock).code() == Errc::kInvalidArgument);
    }
  }
  SECTION("default endpoint from the region") {
    c.endpoint.clear();
    c.region = "eu-central-1";
    auto s = S3ObjectStore::create(c, clock);
    REQUIRE(s.is_ok());
    CHECK((*s)->config().endpoint == "https://s3.eu-central-1.amazonaws.com");
    CHECK((*s)->describe() == "s3://bkt");
  }
}

TEST_CASE("parse_content_range", "[objstore]") {
  uint64_t a = 0, b = 0;
  int64_t total = 0;
  CHECK(warmfs::parse_content_range("bytes 0-99/1000", &a, &b, &total));
  CHECK(a == 0);
  CHECK(b == 99);
  CHECK(total == 1000);
  CHECK(warmfs::parse_content_range("bytes 5-9/*", &a, &b, &total));
  CHECK(total == -1);
  CHECK_FALSE(warmfs::parse_content_range("bytes 9-5/10", &a, &b, &total));
  CHECK_FALSE(warmfs::parse_content_range("items 0-1/2", &a, &b, &total));
  CHECK_FALSE(warmfs::parse_content_range("bytes */1000", &a, &b, &total));
}

TEST_CASE("virtual-hosted requests put the bucket in the Host", "[objstore]") {
  TestHttpServer server([](const ServerRequest&) {
    ServerReply r;
    r.content_length = 3;
    return r;
  });
  FakeClock clock;
  // curl resolves every *.localhost name to the loopback address itself.
  auto cfg = config_for(fmt::format("http://s3.localhost:{}", server.port()));
  cfg.path_style = false;
  auto store = make_store(cfg, clock);
  auto info = store->head("dir/obj");
  REQUIRE(info.is_ok());
  auto req = server.requests().at(0);
  CHECK(req.target == "/dir/obj");
  CHECK(req.header("host") == fmt::format("bkt.s3.localhost:{}", server.port()));
  check_signature(req);
}

TEST_CASE("an endpoint that is an IP address or localhost is path-style without being told",
          "[objstore]") {
  TestHttpServer server([](const ServerRequest&) {
    ServerReply r;
    r.content_length = 3;
    return r;
  });
  FakeClock clock;
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    auto cfg = config_for(fmt::format("http://{}:{}", host, server.port()));
    cfg.path_style = false;
    auto store = make_store(cfg, clock);
    CHECK(store->config().path_style);
    REQUIRE(store->head("dir/obj").is_ok());
    auto req = server.requests().back();
    CHECK(req.target == "/bkt/dir/obj");
    CHECK(req.header("host") == fmt::format("{}:{}", host, server.port()));
    check_signature(req);
  }
}

TEST_CASE("which endpoint hosts need path-style", "[objstore]") {
  using warmfs::endpoint_needs_path_style;
  CHECK(endpoint_needs_path_style("127.0.0.1"));
  CHECK(endpoint_needs_path_style("10.1.2.3:9000"));
  CHECK(endpoint_needs_path_style("[::1]:9000"));
  CHECK(endpoint_needs_path_style("[fd00::5]"));
  CHECK(endpoint_needs_path_style("localhost"));
  CHECK(endpoint_needs_path_style("localhost:4566"));
  CHECK_FALSE(endpoint_needs_path_style("s3.us-east-1.amazonaws.com"));
  CHECK_FALSE(endpoint_needs_path_style("minio.local:9000"));
  CHECK_FALSE(endpoint_needs_path_style("s3.localhost:9000"));
  CHECK_FALSE(endpoint_needs_path_style("1.2.3"));
  CHECK_FALSE(endpoint_needs_path_style("1.2.3.4.5"));
  CHECK_FALSE(endpoint_needs_path_style("1234.2.3.4"));
  CHECK_FALSE(endpoint_needs_path_style("10.0.0.storage"));
}

TEST_CASE("concurrent calls from many threads", "[objstore]") {
  std::string object(4096, '\0');
  for (size_t i = 0; i < object.size(); ++i) object[i] = static_cast<char>('a' + i % 26);
  TestHttpServer server([&](const ServerRequest& req) { return serve_range(req, object); });
  FakeClock clock;
  auto store = make_store(config_for(server.url()), clock);
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::byte> buf(64);
      for (int i = 0; i < 25; ++i) {
        const uint64_t offset = static_cast<uint64_t>((t * 25 + i) * 37 % 4000);
        auto n = store->get_range("k", offset, buf, "");
        if (n.is_ok() && *n == 64 && as_string(buf, 64) == object.substr(offset, 64)) ++good;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(good == 100);
  CHECK(store->counters().get_requests == 100);
  CHECK(store->counters().bytes_read == 6400);
  CHECK(store->http_stats().connections_opened <= 4);
}
