// What the S3ObjectStore tests share: test credentials and a store aimed at a local test server.
#pragma once

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "objstore/s3_store.h"
#include "objstore/sigv4.h"
#include "objstore/time_format.h"
#include "objstore/xml.h"
#include "unit/http/test_http_server.h"

namespace warmfs::testing {

inline constexpr const char* kKeyId = "AKIDTESTKEY000000001";
inline constexpr const char* kSecret = "TESTSECRETdoNotLeak/abcdefghijklmnop";

// Path-style, signed with the test keys, a fixed jitter seed and a short connect timeout.
inline S3Config config_for(const std::string& endpoint) {
  S3Config c;
  c.endpoint = endpoint;
  c.bucket = "bkt";
  c.path_style = true;
  c.credentials = {kKeyId, kSecret, ""};
  c.jitter_seed = 42;
  c.http.connect_timeout = std::chrono::milliseconds(1000);
  return c;
}

inline std::unique_ptr<S3ObjectStore> make_store(const S3Config& c, Clock& clock) {
  auto s = S3ObjectStore::create(c, clock);
  REQUIRE(s.is_ok());
  return std::move(s).value();
}

// Decoded query parameters of a request, in the order sent ("uploads" -> "").
inline std::vector<std::pair<std::string, std::string>> query_params(const ServerRequest& req) {
  std::vector<std::pair<std::string, std::string>> out;
  const size_t q = req.target.find('?');
  if (q == std::string::npos) return out;
  const std::string query = req.target.substr(q + 1);
  size_t pos = 0;
  while (pos < query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    const std::string pair = query.substr(pos, amp - pos);
    const size_t eq = pair.find('=');
    out.emplace_back(*s3::url_decode(pair.substr(0, eq), false),
                     eq == std::string::npos ? "" : *s3::url_decode(pair.substr(eq + 1), false));
    pos = amp + 1;
  }
  return out;
}

// Re-signs what the server received (path, query, the headers the Authorization names, the
// payload hash and the date sent) with the test keys, and checks the signature matches the
// Authorization sent: proves the signature covers the request as it arrived.
inline void check_resigned(const ServerRequest& req) {
  const std::string auth = req.header("authorization");
  size_t sh = auth.find("SignedHeaders=");
  REQUIRE(sh != std::string::npos);
  sh += 14;
  const std::string signed_list = auth.substr(sh, auth.find(',', sh) - sh);
  s3::SigningRequest sr;
  sr.method = req.method;
  sr.path = req.target.substr(0, req.target.find('?'));
  for (auto& kv : query_params(req)) sr.query.push_back(std::move(kv));
  size_t pos = 0;
  while (pos < signed_list.size()) {
    size_t semi = signed_list.find(';', pos);
    if (semi == std::string::npos) semi = signed_list.size();
    const std::string name = signed_list.substr(pos, semi - pos);
    sr.headers.emplace_back(name, req.header(name));
    pos = semi + 1;
  }
  sr.payload_hash = req.header("x-amz-content-sha256");
  const std::string d = req.header("x-amz-date");  // 20240517T093015Z
  REQUIRE(d.size() == 16);
  auto secs = s3::parse_iso8601(fmt::format("{}-{}-{}T{}:{}:{}Z", d.substr(0, 4), d.substr(4, 2),
                                            d.substr(6, 2), d.substr(9, 2), d.substr(11, 2),
                                            d.substr(13, 2)));
  REQUIRE(secs);
  s3::SigV4Signer signer("us-east-1", "s3", s3::PathMode::kS3);
  auto expected = signer.sign(sr, {kKeyId, kSecret, ""},
                              std::chrono::system_clock::time_point(std::chrono::seconds(*secs)));
  CHECK(expected.authorization == auth);
}

}  // namespace warmfs::testing
