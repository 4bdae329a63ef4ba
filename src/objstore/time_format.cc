#include "objstore/time_format.h"

#include <algorithm>
#include <charconv>
#include <ctime>

namespace warmfs::s3 {
namespace {

// Reads exactly `digits` decimal digits at text[pos].
std::optional<int> read_digits(std::string_view text, size_t pos, size_t digits) {
  if (pos + digits > text.size()) return std::nullopt;
  int value = 0;
  for (size_t i = pos; i < pos + digits; ++i) {
    char c = text[i];
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

std::optional<int64_t> to_epoch(int year, int month, int day, int hour, int minute, int second) {
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  return days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 +
         hour * 3600 + minute * 60 + second;
}

}  // namespace

std::string format_amz_date(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm parts{};
  gmtime_r(&secs, &parts);
  char buf[32];
  size_t n = std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &parts);
  return std::string(buf, n);
}

std::optional<int64_t> parse_iso8601(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fff](Z|+00:00)
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != 't') || text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  auto year = read_digits(text, 0, 4), month = read_digits(text, 5, 2),
       day = read_digits(text, 8, 2);
  auto hour = read_digits(text, 11, 2), minute = read_digits(text, 14, 2);
  auto second = read_digits(text, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  size_t pos = 19;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
    if (pos == start) return std::nullopt;
  }
  std::string_view zone = text.substr(pos);
  if (zone != "Z" && zone != "z" && zone != "+00:00") return std::nullopt;
  return to_epoch(*year, *month, *day, *hour, *minute, *second);
}

std::optional<int64_t> parse_http_date(std::string_view text) {
  // "Sun, 06 Nov 1994 08:49:37 GMT"
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (text.size() != 29 || text[3] != ',' || text[4] != ' ' || text[7] != ' ' || text[11] != ' ' ||
      text[16] != ' ' || text[19] != ':' || text[22] != ':' || text.substr(25) != " GMT") {
    return std::nullopt;
  }
  int month = 0;
  for (int i = 0; i < 12; ++i) {
    if (text.substr(8, 3) == kMonths[i]) month = i + 1;
  }
  auto day = read_digits(text, 5, 2), year = read_digits(text, 12, 4);
  auto hour = read_digits(text, 17, 2), minute = read_digits(text, 20, 2);
  auto second = read_digits(text, 23, 2);
  if (month == 0 || !day || !year || !hour || !minute || !second) return std::nullopt;
  return to_epoch(*year, month, *day, *hour, *minute, *second);
}

std::string format_iso8601(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::chrono::system_clock::time_point time_from_epoch_seconds(int64_t seconds) {
  using Clock = std::chrono::system_clock;
  constexpr int64_t kMax =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::time_point::max().time_since_epoch())
          .count() -
      1;
  constexpr int64_t kMin =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::time_point::min().time_since_epoch())
          .count() +
      1;
  return Clock::time_point(std::chrono::seconds(std::clamp(seconds, kMin, kMax)));
}

}  // namespace warmfs::s3
