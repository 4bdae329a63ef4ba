#include "server/chunk_request.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

namespace warmfs {
namespace {

bool same_token(std::string_view given, std::string_view want) {
  if (want.empty()) return false;
  unsigned char diff = given.size() == want.size() ? 0 : 1;
  for (size_t i = 0; i < want.size(); ++i) {
    diff |= static_cast<unsigned char>(want[i] ^ (i < given.size() ? given[i] : 0));
  }
  return diff == 0;
}

std::optional<uint64_t> parse_u64(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::variant<ChunkKey, ChunkRequestError> parse_chunk_request(const http::ServerRequest& request,
                                                              uint64_t chunk_size) {
  for (const char* name : {"bucket", "key", "etag", "index"}) {
    if (!request.has_arg(name) || (request.arg(name).empty() && std::string_view(name) != "etag")) {
      return ChunkRequestError{"BadRequest", fmt::format("missing argument '{}'", name)};
    }
  }
  ChunkKey key{request.arg("bucket"), request.arg("key"), request.arg("etag"), 0};
  const auto index = parse_u64(request.arg("index"));
  if (!index) return ChunkRequestError{"BadRequest", "index must be a number"};
  key.index = *index;
  if (key.etag.empty()) {
    return ChunkRequestError{"BadRequest",
                             "an ETag is required: the server serves named versions only"};
  }
  if (request.has_arg("chunk_size") && parse_u64(request.arg("chunk_size")) != chunk_size) {
    return ChunkRequestError{"ChunkSizeMismatch",
                             fmt::format("this server's chunks are {} bytes", chunk_size)};
  }
  return key;
}

std::variant<std::optional<ChunkRange>, ChunkRequestError> parse_chunk_range(
    const http::ServerRequest& request) {
  const bool has_offset = request.has_arg("offset");
  if (has_offset != request.has_arg("length")) {
    return ChunkRequestError{"BadRequest", "offset and length go together"};
  }
  if (!has_offset) return std::optional<ChunkRange>();
  const auto offset = parse_u64(request.arg("offset"));
  const auto length = parse_u64(request.arg("length"));
  if (!offset || !length || *length == 0) {
    return ChunkRequestError{"BadRequest", "offset and length must be numbers, length not 0"};
  }
  return std::optional<ChunkRange>(ChunkRange{*offset, *length});
}

bool bearer_token_ok(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kBearer = "Bearer ";
  return authorization.starts_with(kBearer) &&
         same_token(authorization.substr(kBearer.size()), token);
}

}  // namespace warmfs
