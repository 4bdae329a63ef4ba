// warmfs unmount and warmfs stats: talk to a running mount through its root directory.
#include <fmt/format.h>
#include <signal.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "common/sizes.h"
#include "fs/filesystem.h"
#include "fuse/fuse_session.h"

namespace warmfs::cli {

std::string read_xattr(const std::string& path, const char* name) {
  std::string buf(256 * 1024, '\0');
  ssize_t n = ::getxattr(path.c_str(), name, buf.data(), buf.size());
  if (n < 0) return {};
  buf.resize(static_cast<size_t>(n));
  return buf;
}

namespace {

std::string latency(uint64_t us) {
  if (us < 1000) return fmt::format("{} us", us);
  return fmt::format("{:.1f} ms", us / 1000.0);
}

}  // namespace

void print_credentials_line(const nlohmann::json& j) {
  auto it = j.find("credentials");
  if (it == j.end() || !it->is_object()) return;
  const auto& c = *it;
  std::string line = c.value("source", "?");
  if (c.contains("expires_at") && c["expires_at"].is_string())
    line += ", expire at " + c["expires_at"].get<std::string>();
  else if (!c.value("anonymous", false))
    line += ", do not expire";
  line += fmt::format(", {} refreshes, {} failed", c.value("refreshes", uint64_t{0}),
                      c.value("refresh_failures", uint64_t{0}));
  const std::string last = c.value("last_error", "");
  if (!last.empty()) line += " (last: " + last + ")";
  std::printf("  credentials         %s\n", line.c_str());
}

int run_unmount(const std::string& mountpoint) {
  const std::string pid_text = read_xattr(mountpoint, kPidXattr);
  Status st = unmount_path(mountpoint);
  if (!st.is_ok()) {
    print_error(st.message());
    return kExitFailure;
  }
  // Wait for the daemon to finish, so that when unmount returns the mount's work is done.
  if (!pid_text.empty()) {
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (::kill(pid, 0) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return kExitOk;
}

int run_stats(const std::string& mountpoint, bool json) {
  const std::string text = read_xattr(mountpoint, kStatsXattr);
  if (text.empty()) {
    const int err = errno;
    if (err == ENODATA || err == ENOTSUP)
      print_error(mountpoint + " is not a warmfs mount");
    else
      print_error("cannot read stats of " + mountpoint + ": " + std::strerror(err));
    return kExitFailure;
  }
  if (json) {
    std::printf("%s\n", text.c_str());
    return kExitOk;
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    print_error("the mount sent malformed stats");
    return kExitFailure;
  }
  auto u = [&](const nlohmann::json& v) { return v.get<uint64_t>(); };
  std::printf("warmfs %s on %s, up %.0f s\n", j["bucket"].get<std::string>().c_str(),
              mountpoint.c_str(), j["uptime_seconds"].get<double>());
  std::printf("  served to readers   %s in %llu reads (p50 %s, p99 %s), %llu errors\n",
              format_size(u(j["bytes_read"])).c_str(), (unsigned long long)u(j["read_requests"]),
              latency(u(j["read_latency_us"]["p50"])).c_str(),
              latency(u(j["read_latency_us"]["p99"])).c_str(),
              (unsigned long long)u(j["read_errors"]));
  std::printf("  from memory cache   %s\n", format_size(u(j["memory_hit_bytes"])).c_str());
  std::printf(
      "  from the bucket     %s; requests: %llu GET, %llu HEAD, %llu LIST; %llu retries, %llu "
      "errors\n",
      format_size(u(j["bucket_bytes_read"])).c_str(),
      (unsigned long long)u(j["bucket_requests"]["get"]),
      (unsigned long long)u(j["bucket_requests"]["head"]),
      (unsigned long long)u(j["bucket_requests"]["list"]),
      (unsigned long long)u(j["bucket_retries"]), (unsigned long long)u(j["bucket_errors"]));
  const auto& mc = j["memory_cache"];
  std::printf("  memory cache        %s of %s used, %s evicted, hit ratio %.1f%%\n",
              format_size(u(mc["used_bytes"])).c_str(),
              format_size(u(mc["capacity_bytes"])).c_str(),
              format_size(u(mc["evicted_bytes"])).c_str(), mc["hit_ratio"].get<double>() * 100);
  if (j.value("disk_cache", false)) {
    std::printf(
        "  SSD cache tier      %s of %s used, %s from it (hit ratio %.1f%%), %s written, %s "
        "evicted, %llu corrupt chunks, %llu errors\n",
        format_size(u(j["cache_used_bytes"])).c_str(),
        format_size(u(j["cache_capacity_bytes"])).c_str(),
        format_size(u(j["disk_hit_bytes"])).c_str(), j["disk_hit_ratio"].get<double>() * 100,
        format_size(u(j["disk_write_bytes"])).c_str(), format_size(u(j["evicted_bytes"])).c_str(),
        (unsigned long long)u(j["corrupt_chunks"]), (unsigned long long)u(j["disk_errors"]));
  }
  if (j.contains("cache_server_hit_bytes")) {
    std::printf(
        "  cache servers       %s held, %s fetched for us, %llu errors (%llu chunks from the "
        "bucket instead)\n",
        format_size(u(j["cache_server_hit_bytes"])).c_str(),
        format_size(u(j["cache_server_miss_bytes"])).c_str(),
        (unsigned long long)u(j["cache_server_errors"]),
        (unsigned long long)u(j["cache_server_fallback_chunks"]));
  }
  if (!j.value("read_only", true)) {
    const auto& rq = j["bucket_requests"];
    std::printf(
        "  written to bucket   %s in %llu objects (%llu PUT, %llu multipart requests, %llu copies, "
        "%llu deletes); "
        "%llu uploads in flight, %llu failed\n",
        format_size(u(j["bucket_bytes_written"])).c_str(),
        (unsigned long long)u(j["uploads_completed"]), (unsigned long long)u(rq["put"]),
        (unsigned long long)u(rq["multipart"]), (unsigned long long)u(rq["copy"]),
        (unsigned long long)u(rq["delete"]), (unsigned long long)u(j["uploads_in_flight"]),
        (unsigned long long)u(j["upload_failures"]));
  } else {
    std::printf("  writes              refused: read-only mount\n");
  }
  print_credentials_line(j);
  const auto& ra = j["readahead"];
  std::printf("  read-ahead          %llu chunks fetched ahead, %llu never read, %s in flight\n",
              (unsigned long long)u(ra["prefetched_chunks"]),
              (unsigned long long)u(ra["wasted_chunks"]),
              format_size(u(ra["inflight_bytes"])).c_str());
  return kExitOk;
}

}  // namespace warmfs::cli
