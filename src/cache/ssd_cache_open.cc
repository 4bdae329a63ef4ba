// SsdCache::open: the cache dir, its lock, the region files, and recovery from the index.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <map>

#include "cache/ssd_cache.h"
#include "cache/ssd_record.h"
#include "common/log.h"

namespace warmfs {
namespace {

// Region slots at most: each keeps a file descriptor open for the cache's lifetime.
constexpr uint64_t kMaxRegions = 1 << 16;

// mkdir -p, creating missing components 0700. An existing dir is left as it is.
Status make_dir(const std::string& path) {
  if (path.empty()) return Status(Errc::kInvalidArgument, "empty cache dir");
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    const std::string part = path.substr(0, pos);
    if (::mkdir(part.c_str(), 0700) == 0 || errno == EEXIST) continue;
    return io::errno_status(errno, "cannot create cache dir " + part);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return io::errno_status(errno, "cache dir " + path);
  if (!S_ISDIR(st.st_mode)) {
    return Status(Errc::kExists, "cache dir " + path + " exists and is not a directory");
  }
  return Status::ok();
}

// Takes the dir's lock file, or says who holds it.
Result<io::UniqueFd> lock_dir(const std::string& dir) {
  const std::string path = dir + "/lock";
  io::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    return io::errno_status(errno, "cache dir " + dir + " is not writable (" + path + ")");
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return io::errno_status(errno, "cannot lock " + path);
    char buf[32] = {};
    const ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
    const long pid = n > 0 ? std::strtol(buf, nullptr, 10) : 0;
    const std::string who = pid > 0 ? fmt::format("warmfs pid {}", pid) : "another warmfs process";
    return Status(Errc::kExists, fmt::format("cache dir {} is in use by {}; give this mount its "
                                             "own --cache-dir",
                                             dir, who));
  }
  const std::string pid = fmt::format("{}\n", ::getpid());
  if (::ftruncate(fd.get(), 0) != 0 ||
      ::pwrite(fd.get(), pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    return io::errno_status(errno, "cannot write " + path);
  }
  return fd;
}

// Region files named by a number at or above count are left from a larger capacity.
void remove_extra_regions(const std::string& regions_dir, uint64_t count) {
  DIR* d = ::opendir(regions_dir.c_str());
  if (d == nullptr) return;
  while (dirent* ent = ::readdir(d)) {
    char* end = nullptr;
    const unsigned long long id = std::strtoull(ent->d_name, &end, 10);
    if (end == ent->d_name || *end != '\0' || id < count) continue;
    ::unlink((regions_dir + "/" + ent->d_name).c_str());
  }
  ::closedir(d);
}

}  // namespace

Result<std::unique_ptr<SsdCache>> SsdCache::open(SsdCacheOptions options, Clock& clock) {
  if (options.region_bytes <= ssd_record::kTrailerBytes) {
    return Status(Errc::kInvalidArgument, "ssd cache region size is too small");
  }
  if (options.capacity_bytes < options.region_bytes) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("ssd cache capacity {} is smaller than one region ({} bytes)",
                              options.capacity_bytes, options.region_bytes));
  }
  const uint64_t count = options.capacity_bytes / options.region_bytes;
  if (count > kMaxRegions) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("ssd cache would need {} regions (at most {}): use larger regions",
                              count, kMaxRegions));
  }
  WARMFS_RETURN_IF_ERROR(make_dir(options.dir));
  WARMFS_ASSIGN_OR_RETURN(io::UniqueFd lock_fd, lock_dir(options.dir));
  const std::string regions_dir = options.dir + "/regions";
  WARMFS_RETURN_IF_ERROR(make_dir(regions_dir));
  WARMFS_RETURN_IF_ERROR(make_dir(options.dir + "/index"));
  remove_extra_regions(regions_dir, count);
  std::vector<io::UniqueFd> fds;
  fds.reserve(count);
  for (uint64_t r = 0; r < count; ++r) {
    const std::string path = fmt::format("{}/{:06}", regions_dir, r);
    io::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!fd.valid()) return io::errno_status(errno, "cannot open region file " + path);
    fds.push_back(std::move(fd));
  }
  WARMFS_ASSIGN_OR_RETURN(auto index, SsdIndex::open(options.dir + "/index"));
  if (!options.io) options.io = io::make_file_io();
  std::unique_ptr<SsdCache> cache(new SsdCache(std::move(options), clock, std::move(lock_fd),
                                               std::move(index), std::move(fds)));
  WARMFS_RETURN_IF_ERROR(cache->recover());
  cache->writer_ = std::thread([c = cache.get()] { c->writer_loop(); });
  pthread_setname_np(cache->writer_.native_handle(), "warmfs-ssd-wr");
  return cache;
}

Status SsdCache::recover() {
  const uint32_t count = static_cast<uint32_t>(region_fds_.size());
  // A different region size moves every record: start empty rather than reinterpret them.
  // Format 2 adds index entries with block CRCs (docs/ssd-cache.md); a format 1 cache is
  // kept as it is (its entries still decode, and their records are read whole), while a
  // build that knows only format 1 starts empty on a format 2 cache rather than dropping
  // entries it cannot decode.
  const std::string format =
      fmt::format("warmfs-ssd-cache 2 region_bytes={}", options_.region_bytes);
  const std::string format1 =
      fmt::format("warmfs-ssd-cache 1 region_bytes={}", options_.region_bytes);
  WARMFS_ASSIGN_OR_RETURN(auto stored, index_->get_meta("format"));
  if (stored && *stored != format && *stored != format1) {
    log::warn("ssd cache {}: layout changed ({} -> {}); starting empty", options_.dir, *stored,
              format);
    WARMFS_RETURN_IF_ERROR(index_->clear());
    for (const auto& fd : region_fds_) {
      if (::ftruncate(fd.get(), 0) != 0) return io::errno_status(errno, "ftruncate region");
    }
  }
  WARMFS_RETURN_IF_ERROR(index_->put_meta("format", format));
  WARMFS_ASSIGN_OR_RETURN(auto gens, index_->region_gens());

  std::vector<uint64_t> sizes(count, 0);
  for (uint32_t r = 0; r < count; ++r) {
    struct stat st {};
    if (::fstat(region_fds_[r].get(), &st) != 0) return io::errno_status(errno, "fstat region");
    sizes[r] = static_cast<uint64_t>(st.st_size);
  }
  std::vector<RegionInfo> found(count);
  uint64_t kept = 0;
  WARMFS_ASSIGN_OR_RETURN(
      uint64_t dropped, index_->scan([&](std::string_view, const SsdIndexEntry& e) {
        if (e.region >= count) return false;
        auto g = gens.find(e.region);
        if (g == gens.end() || g->second != e.gen) return false;  // a stale fill
        if (!ssd_record::fits(e.offset, e.length, sizes[e.region], options_.region_bytes))
          return false;  // cut short
        const uint64_t end = e.offset + e.length + ssd_record::kTrailerBytes;
        RegionInfo& r = found[e.region];
        r.live_bytes += e.length;
        ++r.live_chunks;
        // With O_DIRECT writes, appends resume aligned (a record
        // written through the page cache is not padded).
        const uint64_t aligned =
            options_.direct_writes
                ? std::min<uint64_t>((end + kDirectAlign - 1) / kDirectAlign * kDirectAlign,
                                     options_.region_bytes)
                : end;
        r.write_end = std::max(r.write_end, aligned);
        ++kept;
        return true;
      }));

  // The newest fill continues as the open region; every other one with data is sealed.
  int newest = -1;
  for (uint32_t r = 0; r < count; ++r) {
    if (found[r].live_chunks > 0 && (newest < 0 || gens[r] > gens[newest])) newest = int(r);
  }
  uint64_t bytes = 0;
  std::lock_guard lock(mu_);
  for (const auto& [r, gen] : gens) {
    if (r >= count) continue;
    RegionInfo info = found[r];
    info.gen = gen;
    info.last_access = clock_.now();
    // Frequencies are not persisted: every recovered chunk counts as read once.
    info.score = info.live_chunks;
    info.state = info.live_chunks == 0 ? RegionInfo::State::kFree
                 : int(r) == newest    ? RegionInfo::State::kOpen
                                       : RegionInfo::State::kSealed;
    if (info.state == RegionInfo::State::kFree) info.write_end = 0;
    bytes += info.live_bytes;
    alloc_.restore(r, info);
  }
  if (kept > 0 || dropped > 0) {
    log::info("ssd cache {}: recovered {} chunks ({} bytes), dropped {} inconsistent entries",
              options_.dir, kept, bytes, dropped);
  }
  return Status::ok();
}

}  // namespace warmfs
