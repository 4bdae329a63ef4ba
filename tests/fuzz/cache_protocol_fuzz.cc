// The cache server protocol (cache/remote_protocol.h) from both ends. Server side: a chunk
// request's arguments (parse_chunk_request) and its bearer token (bearer_token_ok), as
// server/cache_server.cc reads them. Client side: the CRC header of an answer (parse_crc),
// /v1/info and error bodies (parse_info, parse_error_message, on the whole input) and a
// server URL as given (normalize_base_url). The input is fields separated by NUL: an
// Authorization value, then query names and values alternately.
#include "cache/remote_protocol.h"
#include "fuzz_util.h"
#include "objstore/xml.h"
#include "server/chunk_request.h"

using namespace warmfs;

namespace {

constexpr uint64_t kChunkSize = 1 << 20;

// The query of a chunk target, decoded as the server's HTTP library decodes it.
http::ServerRequest request_for(const std::string& target) {
  http::ServerRequest r;
  r.method = "GET";
  const size_t q = target.find('?');
  FUZZ_CHECK(q != std::string::npos);
  r.path = target.substr(0, q);
  for (std::string_view pair : fuzz::split(std::string_view(target).substr(q + 1), '&')) {
    const size_t eq = pair.find('=');
    FUZZ_CHECK(eq != std::string_view::npos);
    auto name = s3::url_decode(pair.substr(0, eq), false);
    auto value = s3::url_decode(pair.substr(eq + 1), false);
    FUZZ_CHECK(name.is_ok() && value.is_ok());
    r.query.emplace_back(*name, *value);
  }
  return r;
}

void check_url(std::string_view url) {
  const std::string n = remote::normalize_base_url(url);
  if (n.empty()) return;
  FUZZ_CHECK(n.starts_with("http://") || n.starts_with("https://"));
  FUZZ_CHECK(!n.ends_with("/"));
  FUZZ_CHECK(remote::normalize_base_url(n) == n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> fields = fuzz::split(fuzz::as_view(data, size), '\0');
  const std::string_view auth = fields[0];
  (void)bearer_token_ok(auth, "");
  FUZZ_CHECK(!bearer_token_ok(auth, ""));
  if (auth.starts_with("Bearer ") && auth.size() > 7) {
    FUZZ_CHECK(bearer_token_ok(auth, auth.substr(7)));
    FUZZ_CHECK(!bearer_token_ok(auth, std::string(auth.substr(7)) + "x"));
  }

  http::ServerRequest req;
  req.method = "GET";
  req.path = remote::kChunkPath;
  req.headers.emplace_back("authorization", std::string(auth));
  for (size_t i = 1; i + 1 < fields.size(); i += 2) {
    req.query.emplace_back(std::string(fields[i]), std::string(fields[i + 1]));
  }
  auto parsed = parse_chunk_request(req, kChunkSize);
  if (const auto* key = std::get_if<ChunkKey>(&parsed)) {
    FUZZ_CHECK(!key->bucket.empty() && !key->key.empty() && !key->etag.empty());
    FUZZ_CHECK(key->bucket == req.arg("bucket") && key->key == req.arg("key"));
    // What a client asks for is what the server reads.
    auto again =
        parse_chunk_request(request_for(remote::chunk_target(*key, kChunkSize)), kChunkSize);
    FUZZ_CHECK(std::holds_alternative<ChunkKey>(again) && std::get<ChunkKey>(again) == *key);
  } else {
    const auto& e = std::get<ChunkRequestError>(parsed);
    FUZZ_CHECK(e.code == "BadRequest" || e.code == "ChunkSizeMismatch");
  }

  // The client's reading of answers: the whole input as a /v1/info or an error body.
  const std::string_view body = fuzz::as_view(data, size);
  if (auto info = remote::parse_info(body)) FUZZ_CHECK(info->buckets.size() <= size);
  if (auto message = remote::parse_error_message(body)) FUZZ_CHECK(message->size() <= size);

  for (std::string_view f : fields) {
    if (auto crc = remote::parse_crc(f))
      FUZZ_CHECK(remote::parse_crc(remote::format_crc(*crc)) == crc);
    check_url(f);
  }
  return 0;
}
