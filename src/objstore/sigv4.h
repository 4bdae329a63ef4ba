// AWS Signature Version 4 (header form), for S3 and, in tests, any AWS service.
//
// The signer builds the canonical request, the string to sign and the Authorization header
// from a request described as method, path, query parameters, headers and a payload hash.
// It exposes the intermediate strings so tests can compare each step with the AWS suite.
// It signs every header it is given (the caller chooses which to send), sets x-amz-date from
// the time given and, with a session token, x-amz-security-token. It does not send anything
// and never logs. Stateless after construction; thread safe.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/http_client.h"
#include "objstore/credentials.h"

namespace warmfs::s3 {

inline constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
// SHA-256 of the empty string.
inline constexpr std::string_view kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// How the request path becomes the canonical URI.
enum class PathMode {
  // S3: the path is used exactly as sent, already percent-encoded once per segment
  // (http::uri_encode(key, keep_slash=true)); no dot-segment or slash normalization, since
  // "a//b/../c" is a valid key.
  kS3,
  // Every other service: remove "." and ".." segments and empty segments, then
  // percent-encode the (already encoded) path again.
  kNormalized,
};

using QueryParams = std::vector<std::pair<std::string, std::string>>;

struct SigningRequest {
  std::string method = "GET";
  std::string path = "/";    // as sent on the request line, without the query
  QueryParams query;         // decoded names and values, any order
  http::Headers headers;     // all are signed; must include host
  std::string payload_hash;  // hex SHA-256 of the body, or kUnsignedPayload
};

struct SigningResult {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signed_headers;  // "host;x-amz-date"
  std::string signature;       // hex
  std::string authorization;   // value of the Authorization header
  // The request's headers plus x-amz-date, x-amz-security-token (with a session token) and
  // authorization: the complete list to send.
  http::Headers headers;
};

class SigV4Signer {
 public:
  SigV4Signer(std::string region, std::string service, PathMode path_mode);

  // Signs for the instant `now` (seconds precision). x-amz-date and x-amz-security-token in
  // request.headers are replaced by the values the signature covers. Credentials must not be
  // empty.
  SigningResult sign(const SigningRequest& request, const Credentials& credentials,
                     std::chrono::system_clock::time_point now) const;

  const std::string& region() const { return region_; }

 private:
  std::string canonical_uri(std::string_view path) const;

  std::string region_;
  std::string service_;
  PathMode path_mode_;
};

// Query string in canonical form: names and values percent-encoded (RFC 3986), sorted by
// name then value, joined with '&'. S3 requests use the same string on the wire so the
// signed query is the sent query.
std::string canonical_query_string(const QueryParams& query);

// Lower-case hex SHA-256 of data.
std::string sha256_hex(std::string_view data);

}  // namespace warmfs::s3
