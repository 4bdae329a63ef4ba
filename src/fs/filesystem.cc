#include "fs/filesystem.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "common/buffer.h"
#include "common/log.h"
#include "common/process_stats.h"

namespace warmfs {

Filesystem::Filesystem(Metadata& meta, ReadPath& read_path, BlockCache& memory_cache,
                       BlockCache* disk_cache, ObjectStore& store, Clock& clock, FsOptions options,
                       Uploader* uploader)
    : meta_(meta),
      read_path_(read_path),
      memory_cache_(memory_cache),
      disk_cache_(disk_cache),
      store_(store),
      clock_(clock),
      options_(std::move(options)),
      started_(clock.now()),
      uploader_(options_.read_only ? nullptr : uploader),
      epochs_(options_.epoch_interval) {
  liveness_->fs = this;
  order_ = read_path_.make_order_prefetcher(
      options_.prefix, [this](const std::string& p) { return resolve_order_path(p); },
      options_.order);
  epochs_.update(epoch_counters(), 0);  // the first interval starts with the mount
}

Filesystem::~Filesystem() {
  order_.reset();
  flush_all();
  std::lock_guard lock(liveness_->mu);
  liveness_->fs = nullptr;
}

Attr Filesystem::attr_from(const NodeAttr& n) const {
  // What the object's metadata says, else the mount's defaults (docs/posix.md).
  const ObjectAttrs& o = n.attrs;
  Attr a;
  a.ino = n.ino;
  a.is_dir = n.is_dir;
  a.size = n.size;
  const Timespec mtime = o.mtime.value_or(Timespec{n.mtime_sec, 0});
  const Timespec ctime = o.ctime.value_or(mtime);
  a.mtime_sec = mtime.sec;
  a.mtime_nsec = mtime.nsec;
  a.ctime_sec = ctime.sec;
  a.ctime_nsec = ctime.nsec;
  const Timespec atime = o.atime.value_or(mtime);
  a.atime_sec = atime.sec;
  a.atime_nsec = atime.nsec;
  a.uid = o.uid.value_or(options_.uid);
  a.gid = o.gid.value_or(options_.gid);
  // A file's type is in its stored mode when it is not a regular file (s3fs's layout).
  const uint32_t stored_type = o.mode ? (*o.mode & S_IFMT) : 0;
  const uint32_t type =
      n.is_dir ? S_IFDIR : (stored_type != 0 && stored_type != S_IFDIR ? stored_type : S_IFREG);
  a.rdev = o.rdev.value_or(0);
  const uint32_t perm = o.mode ? *o.mode : (n.is_dir ? options_.dir_mode : options_.file_mode);
  a.mode = type | (perm & 07777);
  a.nlink = n.unlinked ? 0 : (n.is_dir ? 2 : 1);
  return a;
}

Result<Attr> Filesystem::lookup(uint64_t parent, std::string_view name) {
  if (auto c = control_lookup(parent, name)) return std::move(*c);
  WARMFS_ASSIGN_OR_RETURN(NodeAttr n, meta_.lookup(parent, name));
  Attr a = attr_from(n);
  apply_staged(a, n);
  return a;
}

Status Filesystem::adopt(uint64_t ino, uint64_t parent, std::string_view name, uint64_t nlookup) {
  if (is_control_ino(ino)) return Status::ok();
  WARMFS_ASSIGN_OR_RETURN(NodeAttr n, meta_.lookup(parent, name));
  return meta_.adopt_ino(n.ino, ino, nlookup);
}

void Filesystem::forget(uint64_t ino, uint64_t nlookup) {
  if (is_control_ino(ino)) return;
  meta_.forget(ino, nlookup);
  if (meta_.getattr(ino).is_ok()) return;
  std::lock_guard lock(open_mu_);
  last_open_etag_.erase(ino);
}

Result<Attr> Filesystem::getattr(uint64_t ino) {
  if (is_control_ino(ino)) return control_attr(ino);
  WARMFS_ASSIGN_OR_RETURN(NodeAttr n, meta_.getattr(ino));
  Attr a = attr_from(n);
  apply_staged(a, n);
  return a;
}

Result<OpenDirPtr> Filesystem::opendir(uint64_t ino) {
  if (ino == kControlDirIno) return std::make_shared<const OpenDir>(control_listing());
  if (ino == kOrderFileIno) return Status(Errc::kNotDirectory, "not a directory");
  return meta_.open_dir(ino);
}

Result<OpenResult> Filesystem::open(uint64_t ino, int flags) {
  if (ino == kOrderFileIno) return open_control(flags);
  if (ino == kControlDirIno) return Status(Errc::kIsDirectory, "is a directory");
  const bool writable = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0;
  if (writable) WARMFS_RETURN_IF_ERROR(check_writable());
  if (uploader_ != nullptr) sweep_staged();  // let go of staged copies kept past their time
  // A file being written here is what its staged copy says, not what the bucket has.
  std::shared_ptr<StagedObject> staged = find_staged(ino);
  NodeAttr n;
  if (staged) {
    WARMFS_ASSIGN_OR_RETURN(n, meta_.getattr(ino));
  } else {
    WARMFS_ASSIGN_OR_RETURN(n, meta_.revalidate_file(ino));
  }
  if (n.is_dir) return Status(Errc::kIsDirectory, "is a directory");
  WARMFS_ASSIGN_OR_RETURN(std::string key, meta_.key_of(ino));
  epoch_tick();
  opens_.fetch_add(1, std::memory_order_relaxed);
  OpenResult r;
  {
    std::lock_guard lock(open_mu_);
    auto [it, inserted] = last_open_etag_.try_emplace(ino, n.etag);
    r.keep_cache = !inserted && it->second == n.etag && !n.etag.empty() && !staged && !writable;
    it->second = n.etag;
  }
  if (!staged && !writable && n.size <= kWarmFileMaxBytes) warm_following(ino);
  ObjectVersion v{key, n.etag, n.size};
  order_->file_opened(key);
  epochs_.note_read(std::chrono::duration<double>(clock_.now() - started_).count());
  auto reader = read_path_.open(v);
  auto handle = std::make_unique<FileHandle>(ino, std::move(v), std::move(reader));
  if (writable || staged) {
    handle->staged_ = hold_staged(ino, key);
    handle->writable_ = writable;
    if ((flags & O_TRUNC) != 0) {
      Status st = handle->staged_->stage_empty();
      if (!st.is_ok()) {
        release(std::move(handle));
        return st;
      }
    }
  }
  r.handle = std::move(handle);
  return r;
}

void Filesystem::warm_following(uint64_t ino) {
  uint64_t parent = 0;
  size_t index = 0;
  std::vector<DirEntry> next;
  if (!meta_.following_entries(ino, kWarmAhead, &parent, &index, &next)) return;
  size_t from = 0;
  {
    std::lock_guard lock(scan_mu_);
    if (scans_.size() > 1024) scans_.clear();  // a bound, not a policy
    DirScan& d = scans_[parent];
    // In order: near the last open (several threads going through one listing interleave).
    const bool in_order = d.seen && index + 8 >= d.last_index && index <= d.last_index + 16;
    d.streak = in_order ? d.streak + 1 : 0;
    d.last_index = in_order ? std::max(d.last_index, index) : index;
    if (!in_order) d.warmed_upto = index + 1;
    d.seen = true;
    if (d.streak < 2) return;
    from = std::max(index + 1, d.warmed_upto);
    d.warmed_upto = std::max(d.warmed_upto, index + 1 + next.size());
  }
  for (size_t k = from - (index + 1); k < next.size(); ++k) {
    const DirEntry& e = next[k];
    if (e.is_dir || e.etag.empty() || e.size == 0 || e.size > kWarmFileMaxBytes) continue;
    auto key = meta_.child_key(parent, e.name, false);
    if (!key.is_ok()) continue;
    read_path_.warm(ObjectVersion{*key, e.etag, e.size}, kWarmFileMaxBytes);
    warmed_files_.fetch_add(1, std::memory_order_relaxed);
  }
}

Result<size_t> Filesystem::read(FileHandle& handle, uint64_t offset, std::span<std::byte> out) {
  std::vector<ChunkSlice> slices;
  WARMFS_ASSIGN_OR_RETURN(size_t n, read_slices(handle, offset, out.size(), slices));
  size_t copied = 0;
  for (const ChunkSlice& s : slices) {
    std::memcpy(out.data() + copied, s.chunk->bytes.data() + s.offset, s.length);
    copied += s.length;
  }
  return n;
}

Result<size_t> Filesystem::read_slices(FileHandle& handle, uint64_t offset, uint64_t length,
                                       std::vector<ChunkSlice>& out) {
  std::shared_ptr<FileHandle::Source> src = handle.source();
  if (handle.ino() == kOrderFileIno) return src->reader->read_slices(offset, length, out);
  const auto start = clock_.now();
  read_requests_.fetch_add(1, std::memory_order_relaxed);
  Result<size_t> r = size_t{0};
  const std::shared_ptr<FileHandle::Source> opened = src;  // the key the order counts
  order_read_started(opened->version.key, offset, length);
  std::shared_ptr<StagedObject> staged = handle.staged();
  // Written through another handle since this one opened: reads see those bytes too.
  if (!staged && uploader_ != nullptr) staged = find_live_staged(handle.ino());
  if (staged && staged->staged()) {
    // Being written (or just written) here: the staged copy has the bytes.
    out.clear();
    std::vector<std::byte> bytes(length);
    r = staged->read(offset, bytes);
    if (r.is_ok()) {
      bytes.resize(*r);
      auto chunk = std::make_shared<Chunk>(Chunk{ChunkBytes(std::move(bytes)), 0});
      if (*r > 0) out.push_back(ChunkSlice{std::move(chunk), 0, *r});
    }
  } else {
    r = src->reader->read_slices(offset, length, out);
    if (!r.is_ok() && r.code() == Errc::kNotFound) {
      if (Status moved = follow_move(handle); moved.is_ok()) {
        src = handle.source();
        r = src->reader->read_slices(offset, length, out);
      } else if (moved.code() != Errc::kNotFound) {
        r = std::move(moved);  // the new key could not be asked: not ENOENT
      }
    }
  }
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.now() - start);
  read_latency_us_.record(static_cast<uint64_t>(ns.count()) / 1000);
  read_wait_ns_.fetch_add(static_cast<uint64_t>(ns.count()), std::memory_order_relaxed);
  order_read_finished(opened->version.key, offset, length);
  if (!r.is_ok()) {
    read_errors_.fetch_add(1, std::memory_order_relaxed);
    log::warn("read of {} at {} failed: {}", src->version.key, offset, r.status().to_string());
    return r;
  }
  bytes_read_.fetch_add(*r, std::memory_order_relaxed);
  return r;
}

Status Filesystem::follow_move(FileHandle& handle) {
  const std::shared_ptr<FileHandle::Source> src = handle.source();
  const ObjectVersion& old = src->version;
  auto key = meta_.key_of(handle.ino());
  if (!key.is_ok() || *key == old.key) return Status(Errc::kNotFound, "not moved");
  // The object at the new key is the one the rename copied: same bytes, and the same size
  // (its ETag may differ: a copy of a multipart object has a new one). A HEAD that fails
  // (a 500, a reset) says nothing about the move: its error is the caller's, not ENOENT.
  auto info = store_.head(*key);
  if (!info.is_ok()) return std::move(info).take_status();
  if (info->size != old.size) return Status(Errc::kNotFound, "moved object replaced");
  ObjectVersion moved{*key, info->etag, info->size};
  log::info("{:?} moved to {:?}: an open handle follows it", old.key, moved.key);
  handle.follow(moved, read_path_.open(moved));
  return Status::ok();
}

StatfsResult Filesystem::statfs() const {
  // A bucket has no size limit; report a large, constant filesystem so tools that check
  // free space (rsync, installers) proceed.
  StatfsResult s;
  s.block_size = 4096;
  s.blocks = 1ull << 40;
  s.blocks_free = uploader_ == nullptr ? 0 : s.blocks;
  s.files = 1ull << 32;
  s.files_free = uploader_ == nullptr ? 0 : s.files;
  return s;
}

Result<std::string> Filesystem::getxattr(uint64_t ino, std::string_view name) {
  if (ino == kRootIno && name == kStatsXattr) return stats_json();
  if (ino == kRootIno && name == kPidXattr) return std::to_string(::getpid());
  // Only the user namespace exists here. Saying "not supported" for the others (security.*,
  // system.posix_acl_*, trusted.*) rather than "no such attribute" lets tools remember it per
  // file system: `ls -l` then asks once per mount instead of twice per file, each a round
  // trip to this process.
  if (!name.starts_with("user.")) return Status(Errc::kNotSupported, "only user.* attributes");
  return Status(Errc::kNotFound, "no such attribute");
}

Status Filesystem::check_writable() const {
  if (uploader_ == nullptr) return Status(Errc::kReadOnly, "the mount is read-only");
  return Status::ok();
}

FsReadCounters Filesystem::read_counters() const {
  FsReadCounters c;
  c.reads = read_requests_.load(std::memory_order_relaxed);
  c.bytes = bytes_read_.load(std::memory_order_relaxed);
  c.errors = read_errors_.load(std::memory_order_relaxed);
  c.opens = opens_.load(std::memory_order_relaxed);
  c.wait_ns = read_wait_ns_.load(std::memory_order_relaxed);
  return c;
}

std::string Filesystem::stats_json() const {
  const ObjectStoreCounters sc = store_.counters();
  const ReadPathCounters rc = read_path_.counters();
  const BlockCacheCounters mc = memory_cache_.counters();
  const MetaCounters meta = meta_.counters();
  const auto uptime = std::chrono::duration<double>(clock_.now() - started_).count();
  nlohmann::json j;
  j["bytes_read"] = bytes_read_.load();
  auto ratio = [](uint64_t hits, uint64_t misses) {
    return hits + misses == 0 ? 0.0 : double(hits) / double(hits + misses);
  };
  // Bytes served to readers from memory (the tier counts whole chunks per lookup).
  j["memory_hit_bytes"] = rc.memory_served_bytes;
  j["memory_hit_ratio"] = ratio(mc.hits, mc.misses);
  const BlockCacheCounters dc =
      disk_cache_ != nullptr ? disk_cache_->counters() : BlockCacheCounters{};
  j["disk_cache"] = disk_cache_ != nullptr;
  j["disk_hit_bytes"] = dc.hit_bytes;
  j["disk_hit_ratio"] = ratio(dc.hits, dc.misses);
  j["disk_range_hits"] = dc.range_hits;  // small reads served by reading only their blocks
  j["disk_write_bytes"] = dc.inserted_bytes;
  j["cache_used_bytes"] = dc.used_bytes;
  j["cache_capacity_bytes"] = dc.capacity_bytes;
  j["evicted_bytes"] = dc.evicted_bytes;
  j["corrupt_chunks"] = dc.corrupt_chunks;
  j["disk_errors"] = dc.errors;
  j["disk_dropped_writes"] = dc.dropped_writes;    // queue full or tier off after an error
  j["disk_rejected_writes"] = dc.rejected_writes;  // refused by admission (scan resistance)
  j["bucket_bytes_read"] = sc.bytes_read;
  j["bucket_requests"] = {
      {"get", sc.get_requests}, {"head", sc.head_requests}, {"list", sc.list_requests}};
  j["bucket_bytes_written"] = sc.bytes_written;
  j["bucket_requests"]["put"] = sc.put_requests;
  j["bucket_requests"]["copy"] = sc.copy_requests;
  j["bucket_requests"]["delete"] = sc.delete_requests;
  j["bucket_requests"]["multipart"] = sc.multipart_requests;
  const UploadCounters uc = uploader_ != nullptr ? uploader_->counters() : UploadCounters{};
  j["uploads_in_flight"] = uc.uploads_in_flight;
  j["upload_failures"] = uc.upload_failures;
  j["uploads_completed"] = uc.completed_uploads;
  j["write_through_bytes"] = uc.write_through_bytes;
  j["staged_files"] = uc.staged_objects;
  j["read_only"] = uploader_ == nullptr;
  j["bucket_retries"] = sc.retries;
  j["bucket_errors"] = sc.errors;
  j["read_latency_us"] = {{"p50", read_latency_us_.percentile(50)},
                          {"p99", read_latency_us_.percentile(99)}};
  j["read_requests"] = read_requests_.load();
  j["read_errors"] = read_errors_.load();
  j["opens"] = opens_.load();
  j["memory_cache"] = {{"used_bytes", mc.used_bytes},
                       {"capacity_bytes", mc.capacity_bytes},
                       {"evicted_bytes", mc.evicted_bytes},
                       {"hit_ratio", ratio(mc.hits, mc.misses)}};
  j["readahead"] = {{"prefetched_chunks", rc.prefetched_chunks},
                    {"warmed_files", warmed_files_.load()},
                    {"wasted_chunks", rc.prefetch_wasted_chunks},
                    {"inflight_bytes", rc.inflight_bytes}};
  j["metadata"] = {{"nodes", meta.nodes},
                   {"listing_cache_hits", meta.listing_cache_hits},
                   {"skipped_keys", meta.skipped_keys},
                   {"listing_index_hits", meta.listing_index_hits},
                   {"listing_index_refreshes", meta.listing_index_refreshes}};
  const ProcessMemory pm = process_memory();
  j["process"] = {{"rss_bytes", pm.rss_bytes},
                  {"rss_peak_bytes", pm.rss_peak_bytes},
                  {"memory_file_bytes", pm.memory_file_bytes},
                  {"held_bytes", pm.held_bytes},
                  {"heap_in_use_bytes", pm.heap_in_use_bytes},
                  {"heap_free_bytes", pm.heap_free_bytes},
                  {"buffer_pool_bytes", buffer_pool_stats().pooled_bytes}};
  j["bucket"] = store_.describe() + (options_.prefix.empty() ? "" : "/" + options_.prefix);
  j["uptime_seconds"] = uptime;
  const OrderCounters oc = order_->counters();
  j["order"] = {{"orders", oc.orders},
                {"entries", oc.order_entries},
                {"read", oc.order_read},
                {"fetched", oc.order_fetched},
                {"head", oc.head},
                {"lead", oc.lead},
                {"requests_inflight", oc.requests_inflight},
                {"read_entries", oc.read_entries},
                {"fetched_entries", oc.fetched_entries},
                {"wasted_entries", oc.wasted_entries},
                {"late_reads", oc.late_reads},
                {"unresolved_entries", oc.unresolved_entries}};
  j["epochs"] = epochs_.to_json(epoch_counters());
  for (const auto& part : options_.extra_stats) {
    if (!part) continue;
    auto extra = nlohmann::json::parse(part(), nullptr, false);
    if (extra.is_object()) j.update(extra);
  }
  return j.dump();
}

}  // namespace warmfs
