#include "upload/staging.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/hex.h"
#include "common/log.h"

namespace warmfs {
namespace {

// Aborts the uploads a dead mount's journal left open; returns how many.
uint64_t recover_journal(const std::string& path, ObjectStore& store) {
  std::ifstream in(path);
  std::map<std::string, std::string> open;  // upload id -> key
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string kind, id, hex;
    f >> kind >> id >> hex;
    if (kind == "B" && !id.empty()) open[id] = from_hex(hex).value_or("");
    if (kind == "E") open.erase(id);
  }
  uint64_t aborted = 0;
  for (const auto& [id, key] : open) {
    Status st = store.abort_multipart(key, id);
    if (st.is_ok()) {
      ++aborted;
      log::info("aborted the unfinished upload of {:?} left by an earlier mount", key);
    } else {
      log::warn("cannot abort the unfinished upload {} of {:?}: {}", id, key, st.to_string());
    }
  }
  return aborted;
}

}  // namespace

Result<std::unique_ptr<StagingArea>> StagingArea::open(std::string dir, ObjectStore& store) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io::errno_status(ec.value(), "cannot create staging dir " + dir);
  ::chmod(dir.c_str(), 0700);
  if (::access(dir.c_str(), W_OK) != 0) return io::errno_status(errno, "staging dir " + dir);

  uint64_t recovered = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("journal-", 0) != 0) continue;
    io::UniqueFd fd(::open(entry.path().c_str(), O_RDWR | O_CLOEXEC));
    if (!fd.valid() || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // a live mount's
    recovered += recover_journal(entry.path().string(), store);
    ::unlink(entry.path().c_str());
  }

  // Unique per StagingArea (pid and a time stamp), so a second one in the same process never
  // takes over the first one's journal.
  const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
  const std::string path =
      dir + "/journal-" + std::to_string(::getpid()) + "-" + std::to_string(stamp) + ".log";
  io::UniqueFd journal(
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600));
  if (!journal.valid()) return io::errno_status(errno, "cannot create " + path);
  if (::flock(journal.get(), LOCK_EX | LOCK_NB) != 0)
    return io::errno_status(errno, "cannot lock " + path);
  return std::unique_ptr<StagingArea>(
      new StagingArea(std::move(dir), std::move(journal), path, recovered));
}

StagingArea::~StagingArea() {
  // Every upload ended (or the mount is going away with some open: then keep the journal so
  // the next mount aborts them).
  std::lock_guard lock(mu_);
  struct stat st {};
  if (::fstat(journal_.get(), &st) == 0) {
    std::ifstream in(journal_path_);
    std::map<std::string, int> open;
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string kind, id;
      f >> kind >> id;
      if (kind == "B") open[id] = 1;
      if (kind == "E") open.erase(id);
    }
    if (open.empty()) ::unlink(journal_path_.c_str());
  }
}

uint64_t StagingArea::free_bytes() const {
  struct statvfs vfs {};
  if (::statvfs(dir_.c_str(), &vfs) != 0) return 0;
  return static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
}

Result<io::UniqueFd> StagingArea::new_file() {
  io::UniqueFd fd(::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (fd.valid()) return fd;
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
    return io::errno_status(errno, "cannot create a staging file in " + dir_);
  }
  std::string tmpl = dir_ + "/staged-XXXXXX";
  fd = io::UniqueFd(::mkostemp(tmpl.data(), O_CLOEXEC));
  if (!fd.valid()) return io::errno_status(errno, "cannot create a staging file in " + dir_);
  ::unlink(tmpl.c_str());
  return fd;
}

void StagingArea::append(const std::string& line) {
  std::lock_guard lock(mu_);
  if (::write(journal_.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    log::warn("cannot append to the upload journal {}: {}", journal_path_, std::strerror(errno));
  }
}

void StagingArea::upload_started(std::string_view key, std::string_view upload_id) {
  append("B " + std::string(upload_id) + " " + to_hex(key) + "\n");
}

void StagingArea::upload_ended(std::string_view upload_id) {
  append("E " + std::string(upload_id) + "\n");
}

void StagingArea::abort_failed(std::string key, std::string upload_id) {
  std::lock_guard lock(aborts_mu_);
  failed_aborts_.emplace_back(std::move(key), std::move(upload_id));
}

size_t StagingArea::failed_aborts() const {
  std::lock_guard lock(aborts_mu_);
  return failed_aborts_.size();
}

size_t StagingArea::retry_aborts(ObjectStore& store) {
  std::vector<std::pair<std::string, std::string>> todo;
  {
    std::lock_guard lock(aborts_mu_);
    todo.swap(failed_aborts_);
  }
  std::vector<std::pair<std::string, std::string>> left;
  for (auto& [key, id] : todo) {
    Status st = store.abort_multipart(key, id);
    if (st.is_ok() || st.code() == Errc::kNotFound) {  // NoSuchUpload: already gone
      upload_ended(id);
      log::info("aborted the multipart upload of {:?} on a later try", key);
    } else {
      left.emplace_back(std::move(key), std::move(id));
    }
  }
  std::lock_guard lock(aborts_mu_);
  failed_aborts_.insert(failed_aborts_.end(), std::make_move_iterator(left.begin()),
                        std::make_move_iterator(left.end()));
  return failed_aborts_.size();
}

}  // namespace warmfs
