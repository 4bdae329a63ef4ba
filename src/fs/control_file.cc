// The control directory MOUNT/.warmfs and its order file, the order prefetcher's wiring and
// the epochs. The directory is served by the core alone: lookups find it, readdir of the root
// does not list it (tree walks and copies pass it by), and nothing written to it reaches the
// bucket. The order file reads as empty; what a handle writes is parsed and published when
// the handle is flushed (close), so a bad order fails close() with EINVAL.
#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>

#include "common/log.h"
#include "fs/filesystem.h"
#include "fs/order_file.h"

namespace warmfs {
namespace {

// An order file larger than this is refused (EFBIG): some 10 million entries.
constexpr uint64_t kMaxOrderBytes = 1ull << 30;

// A handle of the order file reads nothing.
class EmptyReader final : public Reader {
 public:
  Result<size_t> read_slices(uint64_t, uint64_t, std::vector<ChunkSlice>& out) override {
    out.clear();
    return size_t{0};
  }
  Result<size_t> read(uint64_t, std::span<std::byte>) override { return size_t{0}; }
};

}  // namespace

Attr Filesystem::control_attr(uint64_t ino) const {
  Attr a;
  a.ino = ino;
  a.uid = options_.uid;
  a.gid = options_.gid;
  a.mtime_sec = wall_sec();
  if (ino == kControlDirIno) {
    a.is_dir = true;
    a.mode = S_IFDIR | 0755;
    a.nlink = 2;
  } else {
    // The owner may write it; its size is always 0 (writes go to the handle, not a file).
    a.mode = S_IFREG | 0644;
  }
  return a;
}

std::optional<Result<Attr>> Filesystem::control_lookup(uint64_t parent, std::string_view name) {
  if (parent == kRootIno && name == kControlDirName)
    return Result<Attr>(control_attr(kControlDirIno));
  if (parent != kControlDirIno) return std::nullopt;
  if (name == kOrderFileName) return Result<Attr>(control_attr(kOrderFileIno));
  return Result<Attr>(Status(Errc::kNotFound, "no such control file"));
}

DirListingPtr Filesystem::control_listing() const {
  auto listing = std::make_shared<DirListing>();
  DirEntry e;
  e.name = std::string(kOrderFileName);
  listing->entries.push_back(e);
  listing->listed_at = clock_.now();
  return listing;
}

Status Filesystem::refuse_control(uint64_t parent, std::string_view name) const {
  if (is_control_ino(parent) || (parent == kRootIno && name == kControlDirName)) {
    return Status(Errc::kNotPermitted, "the control directory cannot be changed");
  }
  return Status::ok();
}

Result<OpenResult> Filesystem::open_control(int flags) {
  OpenResult r;
  r.handle =
      std::make_unique<FileHandle>(kOrderFileIno, ObjectVersion{}, std::make_unique<EmptyReader>());
  // Read-only handles take orders too, through the ioctl channel.
  r.handle->control_ = std::make_shared<ControlWrite>();
  r.handle->writable_ = (flags & O_ACCMODE) != O_RDONLY;
  return r;
}

Status Filesystem::order_append(FileHandle& handle, std::span<const std::byte> data) {
  if (!handle.control()) return Status(Errc::kInvalidArgument, "not the order file");
  ControlWrite& c = *handle.control_;
  std::lock_guard lock(c.mu);
  if (c.bytes.size() + data.size() > kMaxOrderBytes) {
    return Status(Errc::kInvalidArgument, "an order file is at most 1 GiB");
  }
  c.bytes.append(reinterpret_cast<const char*>(data.data()), data.size());
  c.dirty = true;
  return Status::ok();
}

Status Filesystem::order_publish(FileHandle& handle) {
  if (!handle.control()) return Status(Errc::kInvalidArgument, "not the order file");
  Status st = flush_control(handle);
  std::lock_guard lock(handle.control_->mu);
  handle.control_->bytes.clear();  // the next order on this descriptor starts afresh
  return st;
}

Result<size_t> Filesystem::write_control(FileHandle& handle, uint64_t offset,
                                         std::span<const std::byte> data) {
  ControlWrite& c = *handle.control_;
  if (offset + data.size() > kMaxOrderBytes) {
    return Status(Errc::kInvalidArgument, "an order file is at most 1 GiB");
  }
  std::lock_guard lock(c.mu);
  if (c.bytes.size() < offset + data.size()) c.bytes.resize(offset + data.size());
  std::memcpy(c.bytes.data() + offset, data.data(), data.size());
  c.dirty = true;
  return data.size();
}

Status Filesystem::flush_control(FileHandle& handle) {
  ControlWrite& c = *handle.control_;
  std::string text;
  {
    std::lock_guard lock(c.mu);
    if (!c.dirty) return Status::ok();  // a second close of a dup'd descriptor
    c.dirty = false;
    text = c.bytes;
  }
  Result<std::vector<OrderEntry>> entries = parse_order(text);
  if (!entries.is_ok()) {
    log::warn("order file refused: {}", entries.status().message());
    return entries.status();
  }
  const uint64_t n = publish_order(std::move(entries).value());
  log::info("order {} published", n);
  return Status::ok();
}

uint64_t Filesystem::publish_order(std::vector<OrderEntry> entries) {
  const uint64_t count = entries.size();
  const EpochCounters before = epoch_counters();  // its fetches start at once: count them all
  const uint64_t number = order_->publish(std::move(entries));
  epochs_.order_published(number, count, before);
  return number;
}

OrderCounters Filesystem::order_counters() const { return order_->counters(); }

std::vector<Epoch> Filesystem::epochs() const { return epochs_.list(epoch_counters()); }

Result<ObjectVersion> Filesystem::resolve_order_path(const std::string& path) {
  uint64_t dir = kRootIno;
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    const std::string_view name = std::string_view(path).substr(
        start, slash == std::string::npos ? path.npos : slash - start);
    WARMFS_ASSIGN_OR_RETURN(NodeAttr a, meta_.peek(dir, name));
    if (slash == std::string::npos) {
      if (a.is_dir) return Status(Errc::kIsDirectory, path + " is a directory");
      WARMFS_ASSIGN_OR_RETURN(std::string key, meta_.key_of(a.ino));
      return ObjectVersion{std::move(key), a.etag, a.size};
    }
    if (!a.is_dir) return Status(Errc::kNotDirectory, path + ": not a directory on the way");
    dir = a.ino;
    start = slash + 1;
  }
}

EpochCounters Filesystem::epoch_counters() const {
  EpochCounters c;
  c.at_sec = std::chrono::duration<double>(clock_.now() - started_).count();
  c.order_reads = order_ ? order_->counters().read_entries : 0;
  c.opens = opens_.load(std::memory_order_relaxed);
  c.stall_ns = read_wait_ns_.load(std::memory_order_relaxed);
  c.bytes_read = bytes_read_.load(std::memory_order_relaxed);
  const BlockCacheCounters mc = memory_cache_.counters();
  c.memory_hits = mc.hits;
  c.memory_misses = mc.misses;
  if (disk_cache_ != nullptr) {
    const BlockCacheCounters dc = disk_cache_->counters();
    c.disk_hits = dc.hits;
    c.disk_misses = dc.misses;
  }
  const ObjectStoreCounters sc = store_.counters();
  c.bucket_bytes = sc.bytes_read;
  c.bucket_gets = sc.get_requests;
  return c;
}

void Filesystem::epoch_tick() {
  const double now = std::chrono::duration<double>(clock_.now() - started_).count();
  if (!epochs_.due(now)) return;
  const OrderCounters oc = order_->counters();
  epochs_.update(epoch_counters(), oc.order_entries - std::min(oc.order_entries, oc.order_read));
}

void Filesystem::order_read_started(std::string_view key, uint64_t offset, uint64_t length) {
  // Epochs roll before the read counts, so the read that finds an epoch over is the next's.
  epoch_tick();
  order_->read_started(key, offset, length);
}

void Filesystem::order_read_finished(std::string_view key, uint64_t offset, uint64_t length) {
  order_->read_finished(key, offset, length);
  epochs_.note_read(std::chrono::duration<double>(clock_.now() - started_).count());
}

}  // namespace warmfs
