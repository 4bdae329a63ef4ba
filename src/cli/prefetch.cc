#include "cli/prefetch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

namespace warmfs::cli {
namespace {

namespace stdfs = std::filesystem;

std::string describe_error(const std::string& path, int err) {
  return path + ": " + std::strerror(err);
}

// Reads one file to its end; false (errno set) on failure.
bool read_file(const PrefetchFile& f, std::vector<char>& buf, PrefetchProgress& progress) {
  int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  bool ok = true;
  off_t off = 0;
  while (true) {
    ssize_t n = ::pread(fd, buf.data(), buf.size(), off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ok = false;
      break;
    }
    if (n == 0) break;
    off += n;
    progress.bytes_done.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  }
  const int saved = errno;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  errno = saved;
  return ok;
}

}  // namespace

std::vector<PrefetchFile> collect_files(const std::vector<std::string>& paths,
                                        const std::function<void(const std::string&)>& on_error) {
  std::vector<PrefetchFile> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    auto st = stdfs::status(p, ec);
    if (ec) {
      on_error(describe_error(p, ec.value()));
      continue;
    }
    if (stdfs::is_regular_file(st)) {
      files.push_back({p, stdfs::file_size(p, ec)});
      continue;
    }
    if (!stdfs::is_directory(st)) {
      on_error(p + ": not a file or directory");
      continue;
    }
    stdfs::recursive_directory_iterator it(p, stdfs::directory_options::skip_permission_denied, ec);
    if (ec) {
      on_error(describe_error(p, ec.value()));
      continue;
    }
    for (; it != stdfs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) {
        on_error(describe_error(it->path().string(), ec.value()));
        break;
      }
      std::error_code fe;
      if (it->is_regular_file(fe)) files.push_back({it->path().string(), it->file_size(fe)});
    }
  }
  return files;
}

uint64_t prefetch_files(const std::vector<PrefetchFile>& files, unsigned threads,
                        PrefetchProgress& progress,
                        const std::function<void(const std::string&)>& on_error) {
  progress.files_total = files.size();
  for (const auto& f : files) progress.bytes_total += f.size;
  std::atomic<size_t> next{0};
  std::mutex error_mu;  // serializes on_error
  auto worker = [&] {
    std::vector<char> buf(1 << 20);
    for (size_t i = next.fetch_add(1); i < files.size(); i = next.fetch_add(1)) {
      if (!read_file(files[i], buf, progress)) {
        const int err = errno;
        progress.errors.fetch_add(1, std::memory_order_relaxed);
        std::lock_guard lock(error_mu);
        on_error(describe_error(files[i].path, err));
      }
      progress.files_done.fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(1u, threads); ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  return progress.errors.load();
}

}  // namespace warmfs::cli
