#include "common/log.h"

#include <sys/time.h>
#include <syslog.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace warmfs::log {
namespace {

std::atomic<Level> g_level{Level::kInfo};
std::mutex g_mu;        // protects g_out
FILE* g_out = nullptr;  // nullptr means stderr (or syslog)
bool g_syslog = false;  // guarded by g_mu

const char* level_name(Level l) {
  switch (l) {
    case Level::kDebug:
      return "DEBUG";
    case Level::kInfo:
      return "INFO";
    case Level::kWarn:
      return "WARN";
    case Level::kError:
      return "ERROR";
    case Level::kOff:
      return "OFF";
  }
  return "?";
}

}  // namespace

bool parse_level(std::string_view s, Level* out) {
  if (s == "debug")
    *out = Level::kDebug;
  else if (s == "info")
    *out = Level::kInfo;
  else if (s == "warn" || s == "warning")
    *out = Level::kWarn;
  else if (s == "error")
    *out = Level::kError;
  else if (s == "off")
    *out = Level::kOff;
  else
    return false;
  return true;
}

void set_level(Level l) { g_level.store(l, std::memory_order_relaxed); }
Level level() { return g_level.load(std::memory_order_relaxed); }

bool set_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "ae");
  if (f == nullptr) return false;
  std::setvbuf(f, nullptr, _IOLBF, 0);
  std::lock_guard lock(g_mu);
  if (g_out != nullptr) std::fclose(g_out);
  g_out = f;
  return true;
}

void use_syslog() {
  ::openlog("warmfs", LOG_PID | LOG_NDELAY, LOG_DAEMON);
  std::lock_guard lock(g_mu);
  g_syslog = true;
}

void write(Level l, std::string_view message) {
  {
    std::lock_guard lock(g_mu);
    if (g_syslog && g_out == nullptr) {
      const int prio = l == Level::kDebug  ? LOG_DEBUG
                       : l == Level::kInfo ? LOG_INFO
                       : l == Level::kWarn ? LOG_WARNING
                                           : LOG_ERR;
      ::syslog(prio, "%.*s", static_cast<int>(message.size()), message.data());
      return;
    }
  }
  timeval tv{};
  gettimeofday(&tv, nullptr);
  tm parts{};
  gmtime_r(&tv.tv_sec, &parts);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &parts);
  std::string line =
      fmt::format("{}.{:03}Z {} {}\n", stamp, tv.tv_usec / 1000, level_name(l), message);
  std::lock_guard lock(g_mu);
  FILE* out = g_out != nullptr ? g_out : stderr;
  std::fwrite(line.data(), 1, line.size(), out);
}

}  // namespace warmfs::log
