// SigV4 canonicalisation of hostile keys, queries and header values (objstore/sigv4.h).
// The input is fields separated by NUL: an object key, then query names and values
// alternately (a last odd field is a header value). Signing must not crash, must be
// deterministic, and the canonical strings must hold what was given: the path and the query
// decode back to the key and the parameters (http::uri_encode against s3::url_decode), and a
// normalized path has no empty, "." or ".." segment.
#include <algorithm>
#include <chrono>

#include "fuzz_util.h"
#include "http/http_client.h"
#include "objstore/sigv4.h"
#include "objstore/xml.h"

using namespace warmfs;

namespace {

bool encoded_char_ok(char c, bool slash_ok) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~' || c == '%' || (slash_ok && c == '/');
}

std::string decode(std::string_view s) {
  auto d = s3::url_decode(s, false);
  FUZZ_CHECK(d.is_ok());
  return *d;
}

std::vector<std::string_view> lines(std::string_view s) { return fuzz::split(s, '\n'); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string_view> fields = fuzz::split(fuzz::as_view(data, size), '\0');
  const std::string key(fields[0]);
  s3::QueryParams query;
  for (size_t i = 1; i + 1 < fields.size(); i += 2) {
    query.emplace_back(std::string(fields[i]), std::string(fields[i + 1]));
  }
  const std::string header_value = fields.size() % 2 == 0 ? std::string(fields.back()) : "v";

  // The path as the S3 store sends it, and back.
  const std::string path = "/bucket/" + http::uri_encode(key, true);
  for (char c : path) FUZZ_CHECK(encoded_char_ok(c, true));
  FUZZ_CHECK(decode(path.substr(8)) == key);

  // The canonical query: every name and value encoded, sorted, and the same pairs back.
  const std::string cq = s3::canonical_query_string(query);
  std::vector<std::pair<std::string, std::string>> back;
  if (!query.empty()) {
    for (std::string_view pair : fuzz::split(cq, '&')) {
      const size_t eq = pair.find('=');
      FUZZ_CHECK(eq != std::string_view::npos);
      for (char c : pair.substr(0, eq)) FUZZ_CHECK(encoded_char_ok(c, false));
      for (char c : pair.substr(eq + 1)) FUZZ_CHECK(encoded_char_ok(c, false));
      back.emplace_back(decode(pair.substr(0, eq)), decode(pair.substr(eq + 1)));
    }
  }
  std::vector<std::pair<std::string, std::string>> given(query.begin(), query.end());
  std::sort(given.begin(), given.end());
  std::sort(back.begin(), back.end());
  FUZZ_CHECK(back == given);

  s3::SigningRequest req;
  req.method = "GET";
  req.path = path;
  req.query = query;
  req.headers = {{"host", "bucket.s3.amazonaws.com"}, {"X-Amz-Meta-Fuzz", header_value}};
  req.payload_hash = std::string(s3::kUnsignedPayload);
  s3::Credentials creds;
  creds.access_key_id = "AKIDEXAMPLE";
  creds.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  if (fields.size() % 3 == 0) creds.session_token = header_value;
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1440938160));

  const s3::SigV4Signer s3_signer("us-east-1", "s3", s3::PathMode::kS3);
  const s3::SigningResult a = s3_signer.sign(req, creds, now);
  const s3::SigningResult b = s3_signer.sign(req, creds, now);
  FUZZ_CHECK(a.canonical_request == b.canonical_request);
  FUZZ_CHECK(a.signature == b.signature && a.authorization == b.authorization);
  FUZZ_CHECK(a.signature.size() == 64);
  const std::vector<std::string_view> cr = lines(a.canonical_request);
  FUZZ_CHECK(cr.size() >= 6);
  FUZZ_CHECK(cr[0] == "GET" && cr[1] == path && cr[2] == cq);
  FUZZ_CHECK(cr.back() == s3::kUnsignedPayload);
  FUZZ_CHECK(cr[cr.size() - 2] == a.signed_headers);

  // Another service's normalization of the raw key as a path.
  const s3::SigV4Signer other("us-east-1", "service", s3::PathMode::kNormalized);
  req.path = key;
  const s3::SigningResult n = other.sign(req, creds, now);
  const std::string_view uri = lines(n.canonical_request)[1];
  FUZZ_CHECK(uri.starts_with("/"));
  for (char c : uri) FUZZ_CHECK(encoded_char_ok(c, true));
  const std::vector<std::string_view> segments = fuzz::split(uri.substr(1), '/');
  for (size_t i = 0; i < segments.size(); ++i) {
    const bool last = i + 1 == segments.size();
    FUZZ_CHECK(!segments[i].empty() || last);  // only a trailing slash leaves an empty one
    FUZZ_CHECK(segments[i] != "." && segments[i] != "..");
  }
  FUZZ_CHECK(other.sign(req, creds, now).signature == n.signature);
  return 0;
}
