#include "objstore/s3_store_util.h"

#include <fmt/format.h>

#include "objstore/xml.h"

namespace warmfs::s3_detail {
namespace {

// Messages quote S3's text; cap them so one odd server cannot flood a log line.
constexpr size_t kMaxMessage = 400;

}  // namespace

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (s.size() > kMaxMessage) {
    s.resize(kMaxMessage);
    s += "...";
  }
  return s;
}

namespace {

const char* reason_phrase(long status) {
  switch (status) {
    case 301:
      return "Moved Permanently";
    case 307:
      return "Temporary Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 412:
      return "Precondition Failed";
    case 416:
      return "Range Not Satisfiable";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "HTTP error";
  }
}

}  // namespace

Errc errc_for_status(long status) {
  switch (status) {
    case 404:
      return Errc::kNotFound;
    case 401:
    case 403:
      return Errc::kAccessDenied;
    case 412:
      return Errc::kPreconditionFailed;
    case 416:
      return Errc::kRangeNotSatisfiable;
    case 400:
      return Errc::kInvalidArgument;
    default:
      return Errc::kIo;
  }
}

bool is_retryable_status(long status) { return status >= 500 || status == 429; }

std::string error_code(const http::Response& r) {
  if (r.body.empty()) return {};
  auto info = s3::parse_error(r.body);
  return info.is_ok() ? info->code : std::string();
}

bool is_retryable_client_error(const http::Response& r) {
  if (r.status != 400) return false;
  const std::string code = error_code(r);
  return code == "RequestTimeout" || code == "BadDigest";
}

bool is_retryable_error_code(std::string_view code) {
  return code == "InternalError" || code == "SlowDown" || code == "ServiceUnavailable" ||
         code == "RequestTimeout";
}

Errc errc_for(const http::Response& r) {
  const std::string code = error_code(r);
  if (code == "BadDigest" || code == "XAmzContentSHA256Mismatch") return Errc::kCorrupt;
  if (code == "NoSuchUpload") return Errc::kNotFound;
  return errc_for_status(r.status);
}

bool is_retryable_transport(Errc code) {
  return code == Errc::kIo || code == Errc::kTimeout || code == Errc::kUnavailable;
}

// "403 SignatureDoesNotMatch: The request signature..." from an error response. A HEAD has no
// body, so it falls back to the reason phrase ("403 Forbidden").
std::string describe_http_error(const http::Response& r) {
  std::string text = fmt::format("{} ", r.status);
  auto info =
      r.body.empty() ? Result<s3::S3ErrorInfo>(Errc::kCorrupt, "no body") : s3::parse_error(r.body);
  if (info.is_ok()) {
    text += info->code;
    if (!info->message.empty()) text += ": " + info->message;
  } else {
    text += reason_phrase(r.status);
  }
  std::string region = r.header("x-amz-bucket-region");
  if ((r.status == 301 || r.status == 307 || r.status == 400) && !region.empty()) {
    text += fmt::format(" (bucket region is {})", region);
  }
  return text;
}

std::string strip_quotes(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return std::string(etag);
}

std::string quote_etag(std::string_view etag) {
  if (etag.starts_with("\"") || etag.starts_with("W/")) return std::string(etag);
  return fmt::format("\"{}\"", etag);
}

}  // namespace warmfs::s3_detail
