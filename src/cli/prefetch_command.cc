// warmfs prefetch MOUNTPOINT PATH...: warm files or directories into a mount's caches.
#include <fmt/format.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "cli/commands.h"
#include "cli/prefetch.h"
#include "common/sizes.h"
#include "fs/filesystem.h"

namespace warmfs::cli {
namespace {

std::string format_eta(double seconds) {
  if (seconds < 0 || seconds > 360000) return "--:--";
  const int s = static_cast<int>(seconds);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{:02}:{:02}", s / 60, s % 60);
}

// One line, redrawn: "[#####.....]  42%  1.2 GiB / 2.9 GiB  310.5 MiB/s  ETA 00:06".
void draw(const PrefetchProgress& p, double elapsed, bool final_line) {
  const uint64_t done = p.bytes_done.load();
  const double frac = p.bytes_total ? double(done) / double(p.bytes_total) : 1.0;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(frac * kWidth);
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const double eta = rate > 0 ? (double(p.bytes_total) - double(done)) / rate : -1;
  std::string bar(filled, '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "\r[%s] %3.0f%%  %s / %s  %s/s  ETA %s  %llu/%llu files%s", bar.c_str(),
               frac * 100, format_size(done).c_str(), format_size(p.bytes_total).c_str(),
               format_size(static_cast<uint64_t>(rate)).c_str(), format_eta(eta).c_str(),
               (unsigned long long)p.files_done.load(), (unsigned long long)p.files_total,
               final_line ? "\n" : "  ");
  std::fflush(stderr);
}

}  // namespace

int run_prefetch(const std::string& mountpoint, const std::vector<std::string>& paths,
                 unsigned threads) {
  char probe[16];
  if (::getxattr(mountpoint.c_str(), kPidXattr, probe, sizeof probe) < 0) {
    print_error(mountpoint + " is not a warmfs mount");
    return kExitFailure;
  }
  std::vector<std::string> full;
  for (const auto& p : paths) full.push_back(p.empty() || p[0] != '/' ? mountpoint + "/" + p : p);
  uint64_t missing = 0;
  auto on_error = [](const std::string& m) {
    std::fprintf(stderr, "warmfs: prefetch: %s\n", m.c_str());
  };
  auto files = collect_files(full, [&](const std::string& m) {
    ++missing;
    on_error(m);
  });
  PrefetchProgress progress;
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::atomic<bool> done{false};
  std::thread ticker;
  if (tty) {
    ticker = std::thread([&] {
      while (!done.load()) {
        draw(progress, elapsed(), false);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  }
  const uint64_t failed = prefetch_files(files, threads, progress, on_error);
  done = true;
  if (ticker.joinable()) ticker.join();
  if (tty) draw(progress, elapsed(), true);
  const double secs = elapsed();
  std::printf(
      "prefetched %llu files, %s in %.1f s (%s/s)%s\n", (unsigned long long)(files.size() - failed),
      format_size(progress.bytes_done.load()).c_str(), secs,
      format_size(static_cast<uint64_t>(secs > 0 ? progress.bytes_done.load() / secs : 0)).c_str(),
      failed ? fmt::format(", {} failed", failed).c_str() : "");
  return failed == 0 && missing == 0 ? kExitOk : kExitFailure;
}

}  // namespace warmfs::cli
