// The parsing half of the cache server's request handling (server/cache_server.h): a chunk
// request's arguments to a ChunkKey, and the bearer token check. Everything here reads what a
// client sent and nothing else, so it can be tested, and fuzzed, without a server. Pure
// functions; thread safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "cache/block_cache.h"
#include "http/http_server.h"

namespace warmfs {

// Why a chunk request was refused with 400: the error code and message of the answer.
struct ChunkRequestError {
  std::string code;  // "BadRequest" or "ChunkSizeMismatch"
  std::string message;
};

// The chunk a GET /v1/chunk names: bucket, key, a non-empty etag and a decimal index are
// required; a chunk_size argument, when given, must be chunk_size.
std::variant<ChunkKey, ChunkRequestError> parse_chunk_request(const http::ServerRequest& request,
                                                              uint64_t chunk_size);

// A range of a chunk a GET /v1/chunk asks for (offset and length arguments).
struct ChunkRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};
// The range a chunk request asks for: nullopt without offset and length; both must be
// decimal numbers, length not 0 (whether the range lies within the chunk is the server's to
// check, once it knows the chunk's length).
std::variant<std::optional<ChunkRange>, ChunkRequestError> parse_chunk_range(
    const http::ServerRequest& request);

// True when authorization is "Bearer TOKEN" with TOKEN equal to token (non-empty). Compares
// without an early exit, so the time taken does not tell how much of a guess matched.
bool bearer_token_ok(std::string_view authorization, std::string_view token);

}  // namespace warmfs
