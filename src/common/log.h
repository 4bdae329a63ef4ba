// Process-wide logging: one line per event, "<time> <level> <message>", to stderr or a file.
// Thread safe. Secrets must never be passed here (credentials are redacted by their owners).
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace warmfs::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

// Parses "debug", "info", "warn", "error", "off". Returns false on anything else.
bool parse_level(std::string_view s, Level* out);
void set_level(Level level);
Level level();
// Sends output to a file (appended). Returns false and keeps stderr if it cannot be opened.
bool set_file(const std::string& path);
// Sends output to syslog (daemon facility, ident "warmfs"), for a daemon without a log file.
void use_syslog();
void write(Level level, std::string_view message);

template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::kDebug) write(Level::kDebug, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::kInfo) write(Level::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::kWarn) write(Level::kWarn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  if (level() <= Level::kError) write(Level::kError, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace warmfs::log
