// http::apply_header_line: the header lines of an answer, as curl hands them over.
#include <catch2/catch.hpp>

#include "http/http_client.h"

using namespace warmfs;

TEST_CASE("header lines build the response's status and headers", "[http]") {
  http::Response r;
  http::apply_header_line("HTTP/1.1 100 Continue\r\n", r);
  CHECK(r.status == 100);
  http::apply_header_line("X-Early: 1\r\n", r);
  http::apply_header_line("HTTP/1.1 206 Partial Content\r\n", r);
  CHECK(r.status == 206);
  CHECK(r.headers.empty());  // a new response starts over
  http::apply_header_line("Content-Range:  bytes 0-9/100 \r\n", r);
  http::apply_header_line("X-Folded: a\r\n", r);
  http::apply_header_line("\t b\r\n", r);
  http::apply_header_line("no colon here\r\n", r);
  http::apply_header_line("\r\n", r);
  CHECK(r.header("content-range") == "bytes 0-9/100");
  CHECK(r.header("CONTENT-RANGE") == "bytes 0-9/100");
  CHECK(r.header("x-folded") == "a b");
  CHECK(r.headers.size() == 2);
}

TEST_CASE("odd header lines are ignored or kept as sent, never misread", "[http]") {
  http::Response r;
  http::apply_header_line("HTTP/", r);  // no status code
  CHECK(r.status == 0);
  http::apply_header_line(" leading fold with no header\r\n", r);
  CHECK(r.headers.empty());
  http::apply_header_line(":\r\n", r);  // empty name and value
  REQUIRE(r.headers.size() == 1);
  CHECK(r.headers[0].first.empty());
  http::apply_header_line("HTTP/2 5", r);  // a status cut short
  CHECK(r.status == 5);
}
