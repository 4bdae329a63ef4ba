#include "cache/remote_protocol.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "http/http_client.h"

namespace warmfs::remote {

std::string chunk_target(const ChunkKey& key, uint64_t chunk_size) {
  return fmt::format("{}?bucket={}&key={}&etag={}&index={}&chunk_size={}", kChunkPath,
                     http::uri_encode(key.bucket, false), http::uri_encode(key.key, false),
                     http::uri_encode(key.etag, false), key.index, chunk_size);
}

std::string chunk_range_target(const ChunkKey& key, uint64_t chunk_size, uint64_t offset,
                               uint64_t length) {
  return fmt::format("{}&offset={}&length={}", chunk_target(key, chunk_size), offset, length);
}

std::string format_crc(uint32_t crc) { return fmt::format("{:08x}", crc); }

std::optional<uint32_t> parse_crc(std::string_view text) {
  if (text.size() != 8) return std::nullopt;
  uint32_t v = 0;
  for (char c : text) {
    uint32_t d;
    if (c >= '0' && c <= '9')
      d = static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      d = static_cast<uint32_t>(c - 'A' + 10);
    else
      return std::nullopt;
    v = v << 4 | d;
  }
  return v;
}

std::optional<ServerInfo> parse_info(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("buckets") || !j["buckets"].is_array() ||
      !j.contains("chunk_size") || !j["chunk_size"].is_number_unsigned()) {
    return std::nullopt;
  }
  ServerInfo info;
  for (const auto& b : j["buckets"]) {
    if (b.is_string()) info.buckets.push_back(b.get<std::string>());
  }
  info.chunk_size = j["chunk_size"].get<uint64_t>();
  return info;
}

std::optional<std::string> parse_error_message(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("message") && j["message"].is_string()) {
    return j["message"].get<std::string>();
  }
  return std::nullopt;
}

std::string normalize_base_url(std::string_view url) {
  std::string u(url);
  if (u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0) return {};
  const size_t host_at = u.find("://") + 3;
  const size_t path_at = u.find('/', host_at);
  if (path_at != std::string::npos) {
    // Only "/" may follow the host: the protocol's paths are absolute.
    if (u.find_first_not_of('/', path_at) != std::string::npos) return {};
    u.resize(path_at);
  }
  if (u.size() == host_at) return {};
  return u;
}

}  // namespace warmfs::remote
