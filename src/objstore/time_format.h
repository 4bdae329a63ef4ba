// Times in the formats S3 speaks: x-amz-date stamps (20150830T123600Z) for signing,
// ISO 8601 (ListObjectsV2 LastModified) and RFC 7231 dates (HEAD Last-Modified).
//
// Pure functions over UTC; no locale, no time zone database. Thread safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warmfs::s3 {

// "20150830T123600Z", the form SigV4 signs. Sub-second parts are dropped.
std::string format_amz_date(std::chrono::system_clock::time_point t);

// "2026-12-06T08:00:00Z" (seconds, UTC), as credential expirations are shown.
std::string format_iso8601(std::chrono::system_clock::time_point t);

// "2009-10-12T17:50:30.000Z" (fraction optional, "Z" or "+00:00" accepted) to seconds since
// the epoch; nullopt if malformed.
std::optional<int64_t> parse_iso8601(std::string_view text);

// Seconds since the epoch as a time point, held to the range the clock can represent
// (about the years 1678 to 2262): an expiration written as year 4060 means "far away", not an
// overflow.
std::chrono::system_clock::time_point time_from_epoch_seconds(int64_t seconds);

// "Sun, 06 Nov 1994 08:49:37 GMT" (IMF-fixdate, the form S3 sends) to seconds since the
// epoch; nullopt if malformed.
std::optional<int64_t> parse_http_date(std::string_view text);

}  // namespace warmfs::s3
