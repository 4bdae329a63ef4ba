#include "common/listen_address.h"

#include <catch2/catch.hpp>

using warmfs::kMetricsListenRules;
using warmfs::parse_listen_address;

TEST_CASE("listen addresses: IPv4, [IPv6], localhost, all addresses", "[common][listen]") {
  auto a = parse_listen_address("127.0.0.1:9100");
  REQUIRE(a.is_ok());
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 9100);
  CHECK(a->to_string() == "127.0.0.1:9100");

  a = parse_listen_address("[::1]:9100");
  REQUIRE(a.is_ok());
  CHECK(a->host == "::1");
  CHECK(a->to_string() == "[::1]:9100");

  a = parse_listen_address("[::]:80");
  REQUIRE(a.is_ok());
  CHECK(a->host == "::");

  a = parse_listen_address("localhost:7070");
  REQUIRE(a.is_ok());
  CHECK(a->host == "127.0.0.1");

  a = parse_listen_address(":7070");
  REQUIRE(a.is_ok());
  CHECK(a->host == "0.0.0.0");
  CHECK(a->port == 7070);

  a = parse_listen_address("0.0.0.0:65535");
  REQUIRE(a.is_ok());
  CHECK(a->port == 65535);
}

TEST_CASE("listen addresses that are refused, with the flag named", "[common][listen]") {
  for (const char* bad : {"", "9100", "127.0.0.1", "127.0.0.1:", "127.0.0.1:x", "127.0.0.1:65536",
                          "127.0.0.1:-1", "127.0.0.1:+5", "127.0.0.1:80 ", "example.com:80",
                          "[127.0.0.1]:80", "[]:80", "[::1:80", "256.1.1.1:80"}) {
    INFO("'" << bad << "'");
    auto a = parse_listen_address(bad, kMetricsListenRules);
    REQUIRE_FALSE(a.is_ok());
    CHECK(a.code() == warmfs::Errc::kInvalidArgument);
    CHECK(a.status().message().rfind("--metrics-listen '", 0) == 0);
    CHECK(a.status().message().find('\n') == std::string::npos);
  }
}

TEST_CASE("port 0 is any free port for --listen, refused for --metrics-listen",
          "[common][listen]") {
  auto any = parse_listen_address("127.0.0.1:0");
  REQUIRE(any.is_ok());
  CHECK(any->port == 0);
  auto refused = parse_listen_address("127.0.0.1:0", kMetricsListenRules);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().message() ==
        "--metrics-listen '127.0.0.1:0': the port must be between 1 and 65535");
}
