// parse_chunk_request and bearer_token_ok: the cache server's reading of a request; and
// remote::parse_info and parse_error_message: a client's reading of the answers.
#include "server/chunk_request.h"

#include <catch2/catch.hpp>

#include "cache/remote_protocol.h"

using namespace warmfs;

namespace {

http::ServerRequest chunk_request(std::vector<std::pair<std::string, std::string>> query) {
  http::ServerRequest r;
  r.method = "GET";
  r.path = "/v1/chunk";
  r.query = std::move(query);
  return r;
}

std::string refusal(const std::variant<ChunkKey, ChunkRequestError>& v) {
  const auto* e = std::get_if<ChunkRequestError>(&v);
  return e ? e->code + ": " + e->message : "accepted";
}

}  // namespace

TEST_CASE("a chunk request's arguments become its chunk key", "[server]") {
  auto v = parse_chunk_request(chunk_request({{"bucket", "data"},
                                              {"key", "a b/\xff"},
                                              {"etag", "\"e\""},
                                              {"index", "7"},
                                              {"chunk_size", "8"}}),
                               8);
  REQUIRE(std::holds_alternative<ChunkKey>(v));
  const ChunkKey& k = std::get<ChunkKey>(v);
  CHECK(k.bucket == "data");
  CHECK(k.key == "a b/\xff");
  CHECK(k.etag == "\"e\"");
  CHECK(k.index == 7);
  // Without chunk_size the server's own applies.
  CHECK(refusal(parse_chunk_request(
            chunk_request({{"bucket", "b"}, {"key", "k"}, {"etag", "e"}, {"index", "0"}}), 8)) ==
        "accepted");
}

TEST_CASE("a malformed chunk request is refused with its reason", "[server]") {
  const uint64_t cs = 1 << 20;
  CHECK(refusal(parse_chunk_request(chunk_request({{"key", "k"}, {"etag", "e"}, {"index", "0"}}),
                                    cs)) == "BadRequest: missing argument 'bucket'");
  CHECK(refusal(parse_chunk_request(
            chunk_request({{"bucket", "b"}, {"key", ""}, {"etag", "e"}, {"index", "0"}}), cs)) ==
        "BadRequest: missing argument 'key'");
  CHECK(refusal(parse_chunk_request(chunk_request({{"bucket", "b"}, {"key", "k"}, {"index", "0"}}),
                                    cs)) == "BadRequest: missing argument 'etag'");
  CHECK(refusal(parse_chunk_request(
            chunk_request({{"bucket", "b"}, {"key", "k"}, {"etag", ""}, {"index", "0"}}), cs)) ==
        "BadRequest: an ETag is required: the server serves named versions only");
  for (const char* bad : {"", "-1", "1x", " 1", "18446744073709551616", "0x10"}) {
    CHECK(refusal(parse_chunk_request(
              chunk_request({{"bucket", "b"}, {"key", "k"}, {"etag", "e"}, {"index", bad}}), cs)) ==
          (std::string_view(bad).empty() ? "BadRequest: missing argument 'index'"
                                         : "BadRequest: index must be a number"));
  }
  CHECK(
      refusal(parse_chunk_request(
          chunk_request(
              {{"bucket", "b"}, {"key", "k"}, {"etag", "e"}, {"index", "0"}, {"chunk_size", "x"}}),
          cs)) == "ChunkSizeMismatch: this server's chunks are 1048576 bytes");
}

TEST_CASE("the bearer token must match exactly", "[server]") {
  CHECK(bearer_token_ok("Bearer secret", "secret"));
  CHECK_FALSE(bearer_token_ok("Bearer secre", "secret"));
  CHECK_FALSE(bearer_token_ok("Bearer secret2", "secret"));
  CHECK_FALSE(bearer_token_ok("bearer secret", "secret"));
  CHECK_FALSE(bearer_token_ok("Bearer", "secret"));
  CHECK_FALSE(bearer_token_ok("", "secret"));
  CHECK_FALSE(bearer_token_ok("Bearer ", ""));  // no token configured is never a match
}

TEST_CASE("a cache server's /v1/info and error bodies are read, or refused whole", "[remote]") {
  auto info = remote::parse_info(R"({"protocol":1,"buckets":["a",7,"b"],"chunk_size":1048576})");
  REQUIRE(info);
  CHECK(info->buckets == std::vector<std::string>{"a", "b"});
  CHECK(info->chunk_size == 1048576);
  CHECK_FALSE(remote::parse_info(""));
  CHECK_FALSE(remote::parse_info("[]"));
  CHECK_FALSE(remote::parse_info(R"({"buckets":"a","chunk_size":1})"));
  CHECK_FALSE(remote::parse_info(R"({"buckets":[],"chunk_size":-1})"));
  CHECK_FALSE(remote::parse_info(R"({"buckets":[],"chunk_size":1.5})"));
  CHECK_FALSE(remote::parse_info(R"({"buckets":[],"chunk_size":1)"));  // cut short
  CHECK(remote::parse_error_message(R"({"error":"NoSuchKey","message":"gone"})") == "gone");
  CHECK_FALSE(remote::parse_error_message(R"({"error":"NoSuchKey","message":3})"));
  CHECK_FALSE(remote::parse_error_message("<html>502</html>"));
}

TEST_CASE("a chunk request's range is both offset and length, or neither", "[server][range]") {
  auto range = [](std::vector<std::pair<std::string, std::string>> q) -> std::string {
    auto v = parse_chunk_range(chunk_request(std::move(q)));
    if (const auto* e = std::get_if<ChunkRequestError>(&v)) return e->code;
    const auto& r = std::get<std::optional<ChunkRange>>(v);
    return r ? std::to_string(r->offset) + "+" + std::to_string(r->length) : "none";
  };
  CHECK(range({{"bucket", "b"}}) == "none");
  CHECK(range({{"offset", "4096"}, {"length", "100"}}) == "4096+100");
  CHECK(range({{"offset", "0"}, {"length", "1"}}) == "0+1");
  CHECK(range({{"offset", "4096"}}) == "BadRequest");
  CHECK(range({{"length", "4096"}}) == "BadRequest");
  CHECK(range({{"offset", "1"}, {"length", "0"}}) == "BadRequest");
  CHECK(range({{"offset", "-1"}, {"length", "5"}}) == "BadRequest");
  CHECK(range({{"offset", "1x"}, {"length", "5"}}) == "BadRequest");
  CHECK(range({{"offset", ""}, {"length", "5"}}) == "BadRequest");
  CHECK(remote::chunk_range_target({"b", "k", "e", 3}, 8, 10, 20) ==
        remote::chunk_target({"b", "k", "e", 3}, 8) + "&offset=10&length=20");
}
