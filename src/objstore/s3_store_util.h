// Helpers shared by the read and write halves of S3ObjectStore (s3_store.cc,
// s3_store_write.cc): status mapping, one-line messages, ETag quoting. Private to objstore.
#pragma once

#include <charconv>
#include <string>
#include <string_view>

#include "http/http_client.h"
#include "warmfs/result.h"

namespace warmfs::s3_detail {

// Newlines and tabs to spaces, capped so one odd server cannot flood a log line.
std::string one_line(std::string s);
Errc errc_for_status(long status);
bool is_retryable_status(long status);
bool is_retryable_transport(Errc code);
// The S3 error code of a response's <Error> body, or empty.
std::string error_code(const http::Response& r);
// A 400 a request with a body may get from a transient fault: RequestTimeout (the body came
// too slowly) or BadDigest (it arrived changed).
bool is_retryable_client_error(const http::Response& r);
// S3 codes of transient failures, as found in a 200 answer's <Error> body.
bool is_retryable_error_code(std::string_view code);
// errc_for_status refined by the S3 code: BadDigest and XAmzContentSHA256Mismatch are
// kCorrupt (the body changed on the way), NoSuchUpload kNotFound.
Errc errc_for(const http::Response& r);
// "403 SignatureDoesNotMatch: The request signature..." from an error response. A HEAD has no
// body, so it falls back to the reason phrase ("403 Forbidden").
std::string describe_http_error(const http::Response& r);
std::string strip_quotes(std::string_view etag);
std::string quote_etag(std::string_view etag);

template <typename T>
bool parse_number(std::string_view s, T* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace warmfs::s3_detail
