#include "http/http_client.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "unit/http/test_http_server.h"

using warmfs::Errc;
using warmfs::http::Client;
using warmfs::http::ClientOptions;
using warmfs::http::Request;
using warmfs::http::uri_encode;
using warmfs::testing::ServerReply;
using warmfs::testing::ServerRequest;
using warmfs::testing::TestHttpServer;

namespace {

ServerReply hello(const ServerRequest&) {
  ServerReply r;
  r.headers = {{"X-Custom-Header", "Some Value"}, {"ETag", "\"abc\""}};
  r.body = "hello world";
  return r;
}

Request get(const std::string& url) {
  Request r;
  r.url = url;
  return r;
}

}  // namespace

TEST_CASE("uri_encode follows RFC 3986", "[http]") {
  CHECK(uri_encode("AZaz09-_.~", false) == "AZaz09-_.~");
  CHECK(uri_encode("a b+c&d=e", false) == "a%20b%2Bc%26d%3De");
  CHECK(uri_encode("dir/sub dir/f", true) == "dir/sub%20dir/f");
  CHECK(uri_encode("dir/f", false) == "dir%2Ff");
  CHECK(uri_encode("\xE1\x88\xB4", false) == "%E1%88%B4");
  CHECK(uri_encode("%", false) == "%25");
  CHECK(uri_encode("", true).empty());
}

TEST_CASE("GET collects the body and lower-cases response headers", "[http]") {
  TestHttpServer server(hello);
  Client client(ClientOptions{});
  Request req = get(server.url() + "/path/x?a=1");
  req.headers = {{"X-Sent", "yes"}};
  auto r = client.perform(req);
  REQUIRE(r.is_ok());
  CHECK(r->status == 200);
  CHECK(r->body == "hello world");
  CHECK(r->body_size == 11);
  CHECK(r->header("x-custom-header") == "Some Value");
  CHECK(r->header("X-CUSTOM-HEADER") == "Some Value");
  CHECK(r->header("etag") == "\"abc\"");
  bool all_lower = true;
  for (const auto& [k, v] : r->headers) {
    for (char c : k) all_lower = all_lower && !(c >= 'A' && c <= 'Z');
  }
  CHECK(all_lower);
  auto seen = server.requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method == "GET");
  CHECK(seen[0].target == "/path/x?a=1");
  CHECK(seen[0].header("x-sent") == "yes");
}

TEST_CASE("sequential requests reuse one kept-alive connection", "[http]") {
  TestHttpServer server(hello);
  Client client(ClientOptions{});
  for (int i = 0; i < 5; ++i) {
    auto r = client.perform(get(server.url() + "/k" + std::to_string(i)));
    REQUIRE(r.is_ok());
    CHECK(r->body == "hello world");
  }
  CHECK(server.connections_accepted() == 1);
  CHECK(client.stats().requests == 5);
  CHECK(client.stats().connections_opened == 1);
}

TEST_CASE("concurrent requests each get a handle and all succeed", "[http]") {
  TestHttpServer server(hello);
  Client client(ClientOptions{});
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        auto r = client.perform(get(server.url() + "/x"));
        if (r.is_ok() && r->body == "hello world") ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok == 40);
  CHECK(server.connections_accepted() <= 4);
}

TEST_CASE("a body sink receives the body in place", "[http]") {
  TestHttpServer server(hello);
  Client client(ClientOptions{});
  std::vector<std::byte> buf(64);
  Request req = get(server.url() + "/");
  req.body_sink = buf;
  auto r = client.perform(req);
  REQUIRE(r.is_ok());
  CHECK(r->body.empty());
  REQUIRE(r->body_size == 11);
  CHECK(std::string(reinterpret_cast<const char*>(buf.data()), 11) == "hello world");

  SECTION("exact fit is fine") {
    std::vector<std::byte> exact(11);
    req.body_sink = exact;
    auto r2 = client.perform(req);
    REQUIRE(r2.is_ok());
    CHECK(r2->body_size == 11);
  }
  SECTION("a body longer than the sink is kIo") {
    std::vector<std::byte> small(4);
    req.body_sink = small;
    auto r2 = client.perform(req);
    REQUIRE_FALSE(r2.is_ok());
    CHECK(r2.code() == Errc::kIo);
    CHECK_THAT(r2.status().message(), Catch::Contains("larger than"));
  }
}

TEST_CASE("with a sink, an error status's body is still collected", "[http]") {
  TestHttpServer server([](const ServerRequest&) {
    ServerReply r;
    r.status = 404;
    r.body =
        "<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>";
    return r;
  });
  Client client(ClientOptions{});
  std::vector<std::byte> small(4);
  Request req = get(server.url() + "/missing");
  req.body_sink = small;
  auto r = client.perform(req);
  REQUIRE(r.is_ok());
  CHECK(r->status == 404);
  CHECK_THAT(r->body, Catch::Contains("NoSuchKey"));
  CHECK(r->body_size == r->body.size());
}

TEST_CASE("a body cut short by a closed connection is kIo", "[http]") {
  TestHttpServer server([](const ServerRequest&) {
    ServerReply r;
    r.body = std::string(50, 'x');
    r.content_length = 100;
    r.close = true;
    return r;
  });
  Client client(ClientOptions{});
  SECTION("collected") {
    auto r = client.perform(get(server.url() + "/trunc"));
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.code() == Errc::kIo);
    CHECK_THAT(r.status().message(), Catch::Contains("/trunc"));
    CHECK(client.stats().transport_errors == 1);
  }
  SECTION("into a sink") {
    std::vector<std::byte> buf(100);
    Request req = get(server.url() + "/trunc");
    req.body_sink = buf;
    auto r = client.perform(req);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.code() == Errc::kIo);
  }
}

TEST_CASE("HTTP error statuses are responses, not transport errors", "[http]") {
  TestHttpServer server([](const ServerRequest&) {
    ServerReply r;
    r.status = 503;
    r.body = "<Error><Code>SlowDown</Code></Error>";
    return r;
  });
  Client client(ClientOptions{});
  auto r = client.perform(get(server.url() + "/"));
  REQUIRE(r.is_ok());
  CHECK(r->status == 503);
  CHECK_THAT(r->body, Catch::Contains("SlowDown"));
}

TEST_CASE("HEAD reads headers and no body; PUT sends its body", "[http]") {
  TestHttpServer server([](const ServerRequest& req) {
    ServerReply r;
    if (req.method == "HEAD") {
      r.content_length = 12345;
      r.headers = {{"Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"}};
    } else {
      r.body = "got:" + req.body;
    }
    return r;
  });
  Client client(ClientOptions{});
  Request head = get(server.url() + "/obj");
  head.method = "HEAD";
  auto h = client.perform(head);
  REQUIRE(h.is_ok());
  CHECK(h->status == 200);
  CHECK(h->header("content-length") == "12345");
  CHECK(h->body_size == 0);

  Request put = get(server.url() + "/obj");
  put.method = "PUT";
  put.body = "payload bytes";
  auto p = client.perform(put);
  REQUIRE(p.is_ok());
  CHECK(p->body == "got:payload bytes");
  auto seen = server.requests();
  REQUIRE(seen.size() == 2);
  CHECK(seen[1].method == "PUT");
  CHECK(seen[1].header("expect").empty());
  CHECK(seen[1].header("content-type").empty());
  // The HEAD and the PUT shared the connection.
  CHECK(server.connections_accepted() == 1);
}

TEST_CASE("paths are sent as given, dot segments included", "[http]") {
  TestHttpServer server(hello);
  Client client(ClientOptions{});
  auto r = client.perform(get(server.url() + "/bucket/a/./b/../c//d"));
  REQUIRE(r.is_ok());
  CHECK(server.requests().at(0).target == "/bucket/a/./b/../c//d");
}

TEST_CASE("a refused connection is kUnavailable, fast", "[http]") {
  Client client(ClientOptions{});
  const int port = warmfs::testing::unused_local_port();
  auto start = std::chrono::steady_clock::now();
  auto r = client.perform(get("http://127.0.0.1:" + std::to_string(port) + "/x?secret=1"));
  auto elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.code() == Errc::kUnavailable);
  CHECK(elapsed < std::chrono::seconds(2));
  CHECK_THAT(r.status().message(), Catch::Contains("connect"));
  CHECK_THAT(r.status().message(), !Catch::Contains("secret"));
}

TEST_CASE("an unresponsive server times out as kTimeout", "[http]") {
  TestHttpServer server([](const ServerRequest&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return ServerReply{};
  });
  ClientOptions options;
  options.request_timeout = std::chrono::seconds(1);
  Client client(options);
  auto r = client.perform(get(server.url() + "/slow"));
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.code() == Errc::kTimeout);
}

TEST_CASE("a silent server trips the low-speed limit, unless the answer is known to be slow",
          "[http]") {
  TestHttpServer server([](const ServerRequest&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    ServerReply r;
    r.body = "done";
    return r;
  });
  ClientOptions options;
  options.low_speed_time = std::chrono::seconds(1);
  Client client(options);
  auto quick = client.perform(get(server.url() + "/get"));
  REQUIRE_FALSE(quick.is_ok());
  CHECK(quick.code() == Errc::kTimeout);
  Request slow = get(server.url() + "/complete");
  slow.slow_answer = true;  // as CompleteMultipartUpload: the server works, then answers
  auto r = client.perform(slow);
  REQUIRE(r.is_ok());
  CHECK(r->status == 200);
  CHECK(r->body == "done");
}

TEST_CASE("PUT sends the body as given, with Content-Length and no Expect",
          "[http][objstore-write]") {
  TestHttpServer server([](const ServerRequest&) {
    ServerReply r;
    r.headers = {{"ETag", "\"e\""}};
    return r;
  });
  Client client(ClientOptions{});
  // Large enough that curl would ask for 100-continue (over 1 MiB), with NULs and high bytes.
  std::string body(3 << 20, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>((i * 131) % 256);
  Request req;
  req.method = "PUT";
  req.url = server.url() + "/bkt/k?partNumber=1&uploadId=u";
  req.headers = {{"Content-MD5", "abc=="}};
  req.body = body;
  const auto start = std::chrono::steady_clock::now();
  auto r = client.perform(req);
  REQUIRE(r.is_ok());
  CHECK(r->status == 200);
  // No 100-continue wait (curl waits 1 s for a server that does not answer it).
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(900));
  auto seen = server.requests();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method == "PUT");
  CHECK(seen[0].target == "/bkt/k?partNumber=1&uploadId=u");
  CHECK(seen[0].header("content-length") == std::to_string(body.size()));
  CHECK(seen[0].header("expect").empty());
  CHECK(seen[0].header("content-type").empty());
  CHECK(seen[0].header("content-md5") == "abc==");
  CHECK(seen[0].body == body);

  SECTION("an empty PUT sends Content-Length: 0") {
    Request empty;
    empty.method = "PUT";
    empty.url = server.url() + "/bkt/empty";
    REQUIRE(client.perform(empty).is_ok());
    auto again = server.requests();
    REQUIRE(again.size() == 2);
    CHECK(again[1].header("content-length") == "0");
    CHECK(again[1].body.empty());
  }
  SECTION("POST and DELETE") {
    Request post;
    post.method = "POST";
    post.url = server.url() + "/bkt/k?uploads=";
    REQUIRE(client.perform(post).is_ok());
    Request del;
    del.method = "DELETE";
    del.url = server.url() + "/bkt/k";
    REQUIRE(client.perform(del).is_ok());
    auto again = server.requests();
    REQUIRE(again.size() == 3);
    CHECK(again[1].method == "POST");
    CHECK(again[1].header("content-length") == "0");
    CHECK(again[2].method == "DELETE");
    CHECK(again[2].body.empty());
  }
}
