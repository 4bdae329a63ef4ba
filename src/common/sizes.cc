#include "common/sizes.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace warmfs {
namespace {

// Splits "1.5G" into a finite non-negative number and its suffix.
bool split_number(std::string_view text, double* number, std::string_view* suffix) {
  size_t i = 0;
  bool digits = false;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    digits |= text[i] != '.';
    ++i;
  }
  if (!digits) return false;
  std::string num(text.substr(0, i));
  if (num.find('.') != num.rfind('.')) return false;
  char* end = nullptr;
  *number = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !std::isfinite(*number) || *number < 0) return false;
  *suffix = text.substr(i);
  return true;
}

}  // namespace

std::optional<uint64_t> parse_size(std::string_view text) {
  double number = 0;
  std::string_view suffix;
  if (!split_number(text, &number, &suffix)) return std::nullopt;
  std::string s;
  for (char c : suffix) s += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 1;
  if (s.empty() || s == "B")
    mult = 1;
  else if (s == "K" || s == "KB" || s == "KI" || s == "KIB")
    mult = 1024.0;
  else if (s == "M" || s == "MB" || s == "MI" || s == "MIB")
    mult = 1024.0 * 1024;
  else if (s == "G" || s == "GB" || s == "GI" || s == "GIB")
    mult = 1024.0 * 1024 * 1024;
  else if (s == "T" || s == "TB" || s == "TI" || s == "TIB")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else
    return std::nullopt;
  double bytes = number * mult;
  if (bytes > 9.2e18) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::optional<double> parse_duration_seconds(std::string_view text) {
  double number = 0;
  std::string_view suffix;
  if (!split_number(text, &number, &suffix)) return std::nullopt;
  double mult = 0;
  if (suffix.empty() || suffix == "s")
    mult = 1;
  else if (suffix == "m")
    mult = 60;
  else if (suffix == "h")
    mult = 3600;
  else if (suffix == "d")
    mult = 86400;
  else
    return std::nullopt;
  const double seconds = number * mult;
  if (seconds > kMaxDurationSeconds) return std::nullopt;
  return seconds;
}

std::string format_size(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {}", v, kUnits[u]);
}

}  // namespace warmfs
