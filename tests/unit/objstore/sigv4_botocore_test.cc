// S3 signatures compared with botocore's S3SigV4Auth. The expected values were generated
// once by tests/data/botocore_sigv4/generate.py into cases.json; no python at test time.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "http/http_client.h"
#include "objstore/sigv4.h"

using warmfs::s3::Credentials;
using warmfs::s3::PathMode;
using warmfs::s3::SigningRequest;
using warmfs::s3::SigV4Signer;

namespace {

nlohmann::json load_cases() {
  std::ifstream in(std::string(WARMFS_TEST_DATA) + "/botocore_sigv4/cases.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// The path exactly as S3ObjectStore builds it: bucket first for path style, each key
// segment encoded once.
std::string s3_path(const nlohmann::json& c) {
  std::string path;
  const bool path_style = c["path_style"].get<bool>();
  if (path_style) path = "/" + warmfs::http::uri_encode(c["bucket"].get<std::string>(), false);
  const std::string key = c["key"].get<std::string>();
  if (!key.empty() || !path_style) path += "/" + warmfs::http::uri_encode(key, true);
  return path;
}

}  // namespace

TEST_CASE("S3 signatures match botocore", "[sigv4]") {
  const nlohmann::json doc = load_cases();
  const auto when = std::chrono::system_clock::time_point(
      std::chrono::seconds(doc["epoch_seconds"].get<int64_t>()));
  SigV4Signer signer(doc["region"].get<std::string>(), "s3", PathMode::kS3);
  REQUIRE(doc["cases"].size() >= 5);

  for (const auto& c : doc["cases"]) {
    INFO("case: " << c["name"].get<std::string>());
    Credentials creds{doc["access_key_id"], doc["secret_access_key"], ""};
    if (c.value("token", false)) creds.session_token = doc["session_token"];

    SigningRequest req;
    req.method = c["method"];
    req.path = s3_path(c);
    CHECK(req.path == c["path"].get<std::string>());
    for (const auto& q : c["query"]) req.query.emplace_back(q[0], q[1]);
    for (const auto& h : c["headers"]) req.headers.emplace_back(h[0], h[1]);
    req.payload_hash = c["payload_hash"];
    if (c.contains("body")) {
      CHECK(warmfs::s3::sha256_hex(c["body"].get<std::string>()) == req.payload_hash);
    }
    if (c["payload"] == "unsigned") CHECK(req.payload_hash == warmfs::s3::kUnsignedPayload);
    req.headers.emplace_back("x-amz-content-sha256", req.payload_hash);

    auto s = signer.sign(req, creds, when);
    CHECK(s.canonical_request == c["canonical_request"].get<std::string>());
    CHECK(s.string_to_sign == c["string_to_sign"].get<std::string>());
    CHECK(s.authorization == c["authorization"].get<std::string>());
  }
}
