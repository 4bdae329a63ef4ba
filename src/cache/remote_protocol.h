// The cache-server wire protocol (version 1), shared by the client tier (cache/remote_cache.h)
// and the server (server/cache_server.h). docs/cache-server.md is its reference.
//
// HTTP/1.1, kept-alive connections, GET only, every path under /v1/:
//   GET /v1/chunk?bucket=B&key=K&etag=E&index=I&chunk_size=S
//       200: the chunk's bytes (Content-Length: its length), X-Warmfs-Crc32c: 8 hex digits
//       of its CRC32C, X-Warmfs-Source: hit (the server held it) or miss (fetched from the
//       bucket for this request).
//   GET /v1/chunk?...&offset=O&length=L   (both or neither; L > 0, O + L within the chunk)
//       200: bytes [O, O + L) of the chunk only, X-Warmfs-Crc32c of those bytes, and
//       X-Warmfs-Offset: O (a server that predates ranges answers the whole chunk without
//       it, which the client then takes the range from). 416 RangePastEnd when the range is
//       not within the chunk. A server with an SSD tier reads only the blocks that hold the
//       range (docs/ssd-cache.md).
//   GET /v1/info    200: {"protocol":1,"buckets":[...],"chunk_size":S}
//   GET /v1/stats   200: the server's counters as JSON (see docs/cache-server.md)
//   GET /v1/health  200 "ok", without a token (for load balancers and probes)
// Every request but /v1/health carries "Authorization: Bearer TOKEN" unless the server runs
// without a token. Errors are JSON {"error": CODE, "message": TEXT} with status 400 (bad
// request), 401 (no or wrong token), 403 (the bucket refused the server), 404 (no such
// bucket on this server, or no such key), 412 (the object does not have that ETag now), 416
// (index past the end), 502 (the bucket failed), 503 (shutting down).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/block_cache.h"

namespace warmfs::remote {

inline constexpr int kProtocolVersion = 1;
inline constexpr const char* kChunkPath = "/v1/chunk";
inline constexpr const char* kInfoPath = "/v1/info";
inline constexpr const char* kStatsPath = "/v1/stats";
inline constexpr const char* kHealthPath = "/v1/health";
inline constexpr const char* kCrcHeader = "X-Warmfs-Crc32c";
inline constexpr const char* kSourceHeader = "X-Warmfs-Source";
inline constexpr const char* kOffsetHeader = "X-Warmfs-Offset";
// Names the client (host:pid) so the server can count its clients.
inline constexpr const char* kClientHeader = "X-Warmfs-Client";

// "/v1/chunk?bucket=...&key=...&etag=...&index=...&chunk_size=..." with every value
// percent-encoded (RFC 3986).
std::string chunk_target(const ChunkKey& key, uint64_t chunk_size);
// The same for bytes [offset, offset + length) of the chunk.
std::string chunk_range_target(const ChunkKey& key, uint64_t chunk_size, uint64_t offset,
                               uint64_t length);
// 8 lower-case hex digits, and back (nullopt if malformed).
std::string format_crc(uint32_t crc);
std::optional<uint32_t> parse_crc(std::string_view text);
// What a server's GET /v1/info answers.
struct ServerInfo {
  std::vector<std::string> buckets;
  uint64_t chunk_size = 0;
};
// The body of a /v1/info answer; nullopt unless it is a JSON object with a "buckets" array
// and an unsigned "chunk_size" (bucket entries that are not strings are skipped).
std::optional<ServerInfo> parse_info(std::string_view body);
// The "message" of an error answer's JSON body, or nullopt when it has none.
std::optional<std::string> parse_error_message(std::string_view body);

// A base URL as given ("http://h:p/", "https://h"): scheme://host[:port] with no trailing
// slash; empty when it is not http(s).
std::string normalize_base_url(std::string_view url);

}  // namespace warmfs::remote
