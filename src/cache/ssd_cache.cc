// SsdCache at run time: lookups, the write queue and the writer thread, failure handling.
// Opening and recovery are in ssd_cache_open.cc.
#include "cache/ssd_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>

#include "cache/ssd_record.h"
#include "common/buffer.h"
#include "common/crc32c.h"
#include "common/log.h"

namespace warmfs {
namespace {

// The writer wakes this often when idle, to expire regions past their ttl.
constexpr auto kIdleWake = std::chrono::seconds(1);

int64_t to_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

SsdCache::SsdCache(SsdCacheOptions options, Clock& clock, io::UniqueFd lock_fd,
                   std::unique_ptr<SsdIndex> index, std::vector<io::UniqueFd> region_fds)
    : options_(std::move(options)),
      clock_(clock),
      io_(options_.io),
      lock_fd_(std::move(lock_fd)),
      index_(std::move(index)),
      region_fds_(std::move(region_fds)),
      direct_fds_(region_fds_.size()),
      direct_ok_(options_.direct_writes),
      direct_read_fds_(new std::atomic<int>[region_fds_.size()]),
      direct_reads_ok_(options_.direct_writes),
      alloc_(EvictionOptions{.region_count = static_cast<uint32_t>(region_fds_.size()),
                             .region_bytes = options_.region_bytes,
                             .expected_items = options_.capacity_bytes /
                                               std::max<uint64_t>(options_.expected_chunk_bytes, 1),
                             .sample_factor = 10,
                             .ttl = options_.ttl}) {
  for (size_t r = 0; r < region_fds_.size(); ++r) direct_read_fds_[r].store(-1);
}

SsdCache::~SsdCache() {
  if (writer_.joinable()) {
    flush();
    {
      std::lock_guard lock(queue_mu_);
      stopping_ = true;
    }
    queue_cv_.notify_all();
    idle_cv_.notify_all();  // puts waiting for room give up
    writer_.join();
  }
  for (size_t r = 0; r < region_fds_.size(); ++r) {
    if (const int fd = direct_read_fds_[r].load(); fd >= 0) ::close(fd);
  }
}

int SsdCache::direct_read_fd(uint32_t r) {
  if (!direct_reads_ok_.load(std::memory_order_relaxed)) return -1;
  int fd = direct_read_fds_[r].load(std::memory_order_acquire);
  if (fd >= 0) return fd;
  const int opened = ::open(region_path(r).c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (opened < 0) {
    if (errno == EINVAL) direct_reads_ok_.store(false, std::memory_order_relaxed);
    return -1;
  }
  if (direct_read_fds_[r].compare_exchange_strong(fd, opened, std::memory_order_acq_rel)) {
    return opened;
  }
  ::close(opened);  // another reader opened it first
  return fd;
}

std::string SsdCache::region_path(uint32_t r) const {
  return fmt::format("{}/regions/{:06}", options_.dir, r);
}

int64_t SsdCache::wall_seconds() const {
  return std::chrono::duration_cast<std::chrono::seconds>(clock_.wall_now().time_since_epoch())
      .count();
}

bool SsdCache::degraded() const {
  const int64_t until = degraded_until_ns_.load(std::memory_order_relaxed);
  return until != 0 && to_ns(clock_.now()) < until;
}

void SsdCache::warn_limited(const std::string& line) {
  const auto now = clock_.now();
  uint64_t suppressed = 0;
  {
    std::lock_guard lock(warn_mu_);
    if (last_warn_ != std::chrono::steady_clock::time_point{} &&
        now - last_warn_ < options_.log_interval) {
      ++suppressed_warnings_;
      return;
    }
    last_warn_ = now;
    suppressed = suppressed_warnings_;
    suppressed_warnings_ = 0;
  }
  if (suppressed > 0) {
    log::warn("{} ({} similar warnings suppressed)", line, suppressed);
  } else {
    log::warn("{}", line);
  }
}

void SsdCache::fail(const Status& s, std::string_view what) {
  counters_.errors.fetch_add(1, std::memory_order_relaxed);
  const auto until = clock_.now() + options_.error_backoff;
  degraded_until_ns_.store(std::max<int64_t>(to_ns(until), 1), std::memory_order_relaxed);
  warn_limited(fmt::format("ssd cache {}: {} failed: {}; the SSD tier is off for {}s", options_.dir,
                           what, s.message(), options_.error_backoff.count()));
}

void SsdCache::drop_entry(const std::string& key, const SsdIndexEntry& e) {
  std::lock_guard lock(index_mu_);
  auto erased = index_->erase_if(key, e);
  if (!erased.is_ok()) {
    fail(erased.status(), "index delete");
    return;
  }
  if (!*erased) return;
  std::lock_guard alloc_lock(mu_);
  alloc_.on_removed(e.region, e.gen, e.length);
}

std::optional<SsdIndexEntry> SsdCache::find(const ChunkKey& key, const std::string& enc) {
  if (degraded()) return std::nullopt;
  {
    std::lock_guard lock(mu_);
    alloc_.record_access(ChunkKeyHash{}(key));
  }
  auto found = index_->get(enc);
  if (!found.is_ok()) {
    fail(found.status(), "index lookup");
    return std::nullopt;
  }
  if (!found->has_value()) return std::nullopt;
  SsdIndexEntry e = std::move(**found);
  const int64_t ttl = options_.ttl.count();
  if (e.region >= region_fds_.size() || (ttl > 0 && wall_seconds() - e.last_read_sec >= ttl)) {
    drop_entry(enc, e);
    counters_.evicted_bytes.fetch_add(e.length, std::memory_order_relaxed);
    return std::nullopt;
  }
  return e;
}

bool SsdCache::stale(const SsdIndexEntry& e) const {
  std::lock_guard lock(mu_);
  const RegionInfo& r = alloc_.region(e.region);
  return r.gen != e.gen || r.state == RegionInfo::State::kFree;
}

void SsdCache::reject(const std::string& enc, const SsdIndexEntry& e, std::string_view what) {
  // A stale entry lost a race with eviction (the region was refilled): a plain miss.
  if (!stale(e)) {
    counters_.corrupt_chunks.fetch_add(1, std::memory_order_relaxed);
    warn_limited(
        fmt::format("ssd cache {}: chunk in region {} at {} failed its checks ({}); "
                    "dropped",
                    options_.dir, e.region, e.offset, what));
  }
  drop_entry(enc, e);
  counters_.misses.fetch_add(1, std::memory_order_relaxed);
}

void SsdCache::served(const std::string& enc, const SsdIndexEntry& e, uint64_t bytes) {
  // Refresh the entry's read time, at most every quarter ttl, so a read chunk does not expire.
  const int64_t ttl = options_.ttl.count();
  const int64_t now_sec = wall_seconds();
  if (ttl > 0 && now_sec - e.last_read_sec >= std::max<int64_t>(ttl / 4, 1)) {
    std::lock_guard lock(index_mu_);
    auto cur = index_->get(enc);
    if (cur.is_ok() && cur->has_value() && (*cur)->same_place(e)) {
      SsdIndexEntry touched = std::move(**cur);
      touched.last_read_sec = now_sec;
      if (Status s = index_->put(enc, touched); !s.is_ok()) fail(s, "index update");
    }
  }
  counters_.hits.fetch_add(1, std::memory_order_relaxed);
  counters_.hit_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

ChunkPtr SsdCache::get(const ChunkKey& key) {
  const std::string enc = key.encode();
  std::optional<SsdIndexEntry> found = find(key, enc);
  if (!found) {
    counters_.misses.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return read_whole(enc, std::move(*found));
}

ChunkPtr SsdCache::read_whole(const std::string& enc, SsdIndexEntry e) {
  // Not zero-filled: the read overwrites it, and a short read fails the checks below.
  const size_t record = e.length + ssd_record::kTrailerBytes;
  const size_t padded = (record + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
  // O_DIRECT for an aligned record whose buffer is mapped (page-aligned); the read covers the
  // padding (a record written through the page cache may end the file early: a short read
  // that still covers the record is fine).
  const int direct =
      e.offset % kDirectAlign == 0 && padded >= kPoolMinBytes ? direct_read_fd(e.region) : -1;
  std::shared_ptr<std::byte[]> owned = allocate_buffer(direct >= 0 ? padded : record);
  std::span<std::byte> buf(owned.get(), direct >= 0 ? padded : record);
  auto n = direct >= 0 ? io_->read_at(direct, buf, e.offset)
                       : io_->read_at(region_fds_[e.region].get(), buf, e.offset);
  if (direct >= 0 && !n.is_ok() && n.status().code() == Errc::kInvalidArgument) {
    direct_reads_ok_.store(false, std::memory_order_relaxed);
    buf = buf.first(record);
    n = io_->read_at(region_fds_[e.region].get(), buf, e.offset);
  }
  if (!n.is_ok()) {
    fail(n.status(), "read");
    counters_.misses.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const bool intact = ssd_record::intact(buf.first(std::min<size_t>(*n, buf.size())),
                                         {e.length, e.crc32c, ssd_record::key_crc(enc), e.gen});
  if (!intact) {
    reject(enc, e, "record");
    return nullptr;
  }
  {
    std::lock_guard lock(mu_);
    alloc_.on_hit(e.region, e.gen, clock_.now());
  }
  served(enc, e, e.length);
  auto chunk = std::make_shared<Chunk>();
  chunk->bytes = ChunkBytes(std::move(owned), 0, e.length);
  chunk->crc32c = e.crc32c;
  if (e.block_bytes == kCrcBlockBytes) chunk->block_crcs = std::move(e.block_crcs);
  return chunk;
}

bool SsdCache::read_range(const ChunkKey& key, uint64_t offset, std::span<std::byte> out,
                          bool* /*promote*/) {
  const std::string enc = key.encode();
  std::optional<SsdIndexEntry> found = find(key, enc);
  if (!found || offset > found->length || out.size() > found->length - offset) {
    counters_.misses.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  SsdIndexEntry& e = *found;
  if (e.block_bytes == 0 || out.empty()) {
    // No block CRCs (a record of format 1): only the whole record can be checked.
    ChunkPtr c = read_whole(enc, std::move(e));
    if (!c) return false;
    std::memcpy(out.data(), c->bytes.data() + offset, out.size());
    return true;
  }
  // The blocks that hold the range, [first, last].
  const uint64_t bb = e.block_bytes;
  const uint64_t first = offset / bb;
  const uint64_t last = (offset + out.size() - 1) / bb;
  const uint64_t from = first * bb;                                   // in the chunk
  const uint64_t to = std::min<uint64_t>(e.length, (last + 1) * bb);  // in the chunk
  const uint64_t want = to - from;
  // O_DIRECT when the blocks start aligned on disk (a record written with O_DIRECT starts
  // aligned, and blocks are multiples of 4 KiB); the read is rounded up to whole 4 KiB, into
  // the record's trailer or padding (a record written through the page cache may end the file
  // early: a short read that still covers the blocks is fine).
  const uint64_t at = e.offset + from;
  int direct = at % kDirectAlign == 0 ? direct_read_fd(e.region) : -1;
  const uint64_t span =
      direct >= 0 ? (want + kDirectAlign - 1) / kDirectAlign * kDirectAlign : want;
  std::unique_ptr<std::byte, FreeAligned> large;  // for a range too large for range_buffer
  std::byte* buf = span <= kRangeBufferMaxBytes ? range_buffer(span) : nullptr;
  if (buf == nullptr) {
    large.reset(static_cast<std::byte*>(std::aligned_alloc(kDirectAlign, span)));
    if (!large) throw std::bad_alloc();
    buf = large.get();
  }
  auto n = direct >= 0 ? io_->read_at(direct, std::span(buf, span), at)
                       : io_->read_at(region_fds_[e.region].get(), std::span(buf, want), at);
  if (direct >= 0 && !n.is_ok() && n.status().code() == Errc::kInvalidArgument) {
    direct_reads_ok_.store(false, std::memory_order_relaxed);
    n = io_->read_at(region_fds_[e.region].get(), std::span(buf, want), at);
  }
  if (!n.is_ok()) {
    fail(n.status(), "read");
    counters_.misses.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (*n < want) {
    reject(enc, e, "cut short");
    return false;
  }
  for (uint64_t b = first; b <= last; ++b) {
    const uint64_t start = b * bb;
    const uint64_t len = std::min<uint64_t>(bb, e.length - start);
    if (crc32c(std::span<const std::byte>(buf + (start - from), len)) != e.block_crcs[b]) {
      reject(enc, e, fmt::format("block {}", b));
      return false;
    }
  }
  {
    // The bytes read are this entry's only if its region was not refilled meanwhile (a
    // refill takes a new generation before it writes).
    std::lock_guard lock(mu_);
    const RegionInfo& r = alloc_.region(e.region);
    if (r.gen != e.gen || r.state == RegionInfo::State::kFree) {
      counters_.misses.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    alloc_.on_hit(e.region, e.gen, clock_.now());
  }
  std::memcpy(out.data(), buf + (offset - from), out.size());
  counters_.range_hits.fetch_add(1, std::memory_order_relaxed);
  served(enc, e, out.size());
  return true;
}

std::byte* SsdCache::range_buffer(size_t n) {
  // One per thread, aligned for O_DIRECT, grown to the largest range the thread has read:
  // a range read of a few kilobytes costs no allocation and no page fault.
  struct Buffer {
    std::unique_ptr<std::byte, FreeAligned> bytes;
    size_t size = 0;
  };
  thread_local Buffer b;
  if (b.size < n) {
    const size_t cap = (n + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
    b.bytes.reset(static_cast<std::byte*>(std::aligned_alloc(kDirectAlign, cap)));
    if (!b.bytes) throw std::bad_alloc();
    b.size = cap;
  }
  return b.bytes.get();
}

void SsdCache::put(const ChunkKey& key, ChunkPtr chunk) {
  if (!chunk) return;
  const uint64_t n = chunk->bytes.size();
  auto drop = [this] { counters_.dropped_writes.fetch_add(1, std::memory_order_relaxed); };
  if (degraded() || n + ssd_record::kTrailerBytes > options_.region_bytes || n > UINT32_MAX) {
    drop();
    return;
  }
  {
    std::unique_lock lock(queue_mu_);
    auto room = [&] { return stopping_ || queued_bytes_ + n <= options_.write_queue_bytes; };
    if (!room()) idle_cv_.wait_for(lock, options_.put_wait, room);
    if (stopping_ || !room()) {
      drop();
      return;
    }
    queue_.push_back(Pending{key, std::move(chunk)});
    queued_bytes_ += n;
  }
  queue_cv_.notify_one();
}

void SsdCache::flush() {
  {
    std::unique_lock lock(queue_mu_);
    idle_cv_.wait(lock, [this] { return queue_.empty() && !writing_; });
  }
  expire();
}

void SsdCache::writer_loop() {
  // A little ahead of the read path's threads: on a busy machine a writer woken after each
  // write behind dozens of runnable fetch and FUSE threads falls behind a cold read, and the
  // chunks it cannot take are held in memory or dropped (then fetched again). Needs
  // CAP_SYS_NICE; without it the writer runs at the daemon's priority.
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), options_.writer_nice);
  for (;;) {
    Pending p;
    {
      std::unique_lock lock(queue_mu_);
      queue_cv_.wait_for(lock, kIdleWake, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        if (stopping_) return;
        lock.unlock();
        expire();
        continue;
      }
      p = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
    }
    write_one(p);
    {
      std::lock_guard lock(queue_mu_);
      queued_bytes_ -= p.chunk->bytes.size();
      writing_ = false;
    }
    idle_cv_.notify_all();
  }
}

void SsdCache::drop_regions(const std::vector<EvictedRegion>& regions) {
  for (const EvictedRegion& r : regions) {
    counters_.evicted_bytes.fetch_add(r.live_bytes, std::memory_order_relaxed);
    std::lock_guard lock(index_mu_);
    auto n = index_->erase_region(r.region, r.gen);
    if (!n.is_ok()) fail(n.status(), "index delete");
  }
}

void SsdCache::expire() {
  if (options_.ttl.count() <= 0) return;
  std::lock_guard write_lock(write_mu_);
  std::vector<EvictedRegion> expired;
  {
    std::lock_guard lock(mu_);
    expired = alloc_.expire(clock_.now());
  }
  drop_regions(expired);
}

int SsdCache::direct_fd_locked(uint32_t r) {
  if (!direct_ok_) return -1;
  if (!direct_fds_[r].valid()) {
    io::UniqueFd fd(::open(region_path(r).c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC));
    if (!fd.valid()) {
      if (errno != EINVAL) return -1;  // this region only (the next write tries again)
      log::info("ssd cache {}: the file system refuses O_DIRECT; writing through the page cache",
                options_.dir);
      direct_ok_ = false;
      return -1;
    }
    direct_fds_[r] = std::move(fd);
  }
  return direct_fds_[r].get();
}

bool SsdCache::writes_from_memory_file(const Chunk& chunk) {
  // O_DIRECT needs the bytes' address and length aligned to the device's blocks; a chunk of a
  // range GET is a whole number of pages at a page-aligned place in the memory file, except
  // an object's last, short chunk (written by copy, like heap chunks). A small chunk is
  // copied too: its copy costs less than the second request (docs/benchmark-misses.md,
  // "Small files, cold").
  const auto addr = reinterpret_cast<uintptr_t>(chunk.bytes.data());
  return chunk.bytes.size() >= kMemoryFileWriteMinBytes && chunk.bytes.size() % kDirectAlign == 0 &&
         addr % kDirectAlign == 0 && buffer_file(chunk.bytes.data()).has_value();
}

void SsdCache::write_one(const Pending& p) {
  std::lock_guard write_lock(write_mu_);
  if (degraded()) {
    counters_.dropped_writes.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // The trailer stores the CRC32C the chunk was made with, and every read checks the bytes
  // against it: damage from here on, in memory or on disk, is caught then. No pass over the
  // bytes here.
  const Chunk& chunk = *p.chunk;
  const std::string enc = p.key.encode();
  auto existing = index_->get(enc);
  if (!existing.is_ok()) {
    fail(existing.status(), "index lookup");
    return;
  }
  if (existing->has_value()) return;  // already stored (chunks are immutable)

  const auto len = static_cast<uint32_t>(chunk.bytes.size());
  const size_t record = len + ssd_record::kTrailerBytes;
  // For O_DIRECT, padded so the next record starts aligned too (the padding is never read).
  const size_t padded =
      direct_ok_ ? (record + kDirectAlign - 1) / kDirectAlign * kDirectAlign : record;
  Placement pl;
  {
    std::lock_guard lock(mu_);
    pl = alloc_.place(ChunkKeyHash{}(p.key), padded, clock_.now());
  }
  drop_regions(pl.evicted);
  if (!pl.admitted) {
    counters_.rejected_writes.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const int fd = region_fds_[pl.region].get();
  if (pl.opened) {
    // The slot's previous fill is unindexed by now; cut it so nothing of it can be read.
    if (::ftruncate(fd, 0) != 0) return fail(io::errno_status(errno, "ftruncate"), "region reset");
    if (Status s = index_->put_region_gen(pl.region, pl.gen); !s.is_ok()) {
      return fail(s, "index write");
    }
  }
  const ssd_record::Trailer trailer =
      ssd_record::encode({len, chunk.crc32c, ssd_record::key_crc(enc), pl.gen});
  if (write_buf_bytes_ < padded) {
    const size_t cap = std::max<size_t>(padded, kDefaultChunkSize + kDirectAlign);
    write_buf_.reset(static_cast<std::byte*>(std::aligned_alloc(kDirectAlign, cap)));
    write_buf_bytes_ = write_buf_ ? cap : 0;
    if (!write_buf_) return fail(Status(Errc::kNoSpace, "out of memory"), "write buffer");
  }
  std::byte* buf = write_buf_.get();
  // The record (bytes, then trailer, then zeros to the alignment) in buf, for one write.
  auto whole_record = [&] {
    copy_from_buffer(buf, chunk.bytes.data(), len);  // pread for a fill buffer: no page mapped
    std::memcpy(buf + len, trailer.data(), trailer.size());
    std::memset(buf + record, 0, padded - record);
  };
  const int direct = pl.offset % kDirectAlign == 0 ? direct_fd_locked(pl.region) : -1;
  Status written;
  if (direct >= 0 && writes_from_memory_file(chunk)) {
    // A chunk of a download, whole pages of the memory file: the disk takes its bytes from
    // there (the kernel pins the pages; no copy), then the trailer's block. Two requests
    // instead of a copy of the chunk, which was most of the writer's CPU in a cold read
    // (docs/benchmark-misses.md, "Cold sequential").
    std::memcpy(buf, trailer.data(), trailer.size());
    std::memset(buf + trailer.size(), 0, padded - record);
    written = io_->write_at(direct, chunk.bytes, pl.offset);
    if (written.is_ok()) {
      written = io_->write_at(direct, std::span(buf, padded - len), pl.offset + len);
    }
  } else {
    whole_record();
    written = direct >= 0 ? io_->write_at(direct, std::span(buf, padded), pl.offset)
                          : io_->write_at(fd, std::span(buf, record), pl.offset);
  }
  if (direct >= 0 && written.code() == Errc::kInvalidArgument) {
    // Opened, but the file system still refused the direct write: buffered from now on.
    log::info("ssd cache {}: O_DIRECT write refused ({}); writing through the page cache",
              options_.dir, written.message());
    direct_ok_ = false;
    whole_record();
    written = io_->write_at(fd, std::span(buf, record), pl.offset);
  }
  if (!written.is_ok()) return fail(written, "write");
  // Data first, then the entry: an entry never points at bytes not yet written.
  SsdIndexEntry e{pl.region, pl.gen, pl.offset, len, chunk.crc32c, wall_seconds()};
  // The block CRCs go into the entry (so a range read needs nothing but the entry and its
  // blocks), when the chunk has them and they agree with its CRC (a few microseconds, no pass
  // over the bytes); a chunk without them is only ever read whole.
  if (chunk.block_crcs.size() == crc_block_count(len) &&
      combine_block_crcs(chunk.block_crcs, len) == chunk.crc32c) {
    e.block_bytes = kCrcBlockBytes;
    e.block_crcs = chunk.block_crcs;
  }
  {
    std::lock_guard lock(index_mu_);
    if (Status s = index_->put(enc, e); !s.is_ok()) return fail(s, "index write");
    std::lock_guard alloc_lock(mu_);
    alloc_.on_written(pl, len);
  }
  counters_.inserted_bytes.fetch_add(len, std::memory_order_relaxed);
}

BlockCacheCounters SsdCache::counters() const {
  BlockCacheCounters c;
  c.hits = counters_.hits.load(std::memory_order_relaxed);
  c.hit_bytes = counters_.hit_bytes.load(std::memory_order_relaxed);
  c.misses = counters_.misses.load(std::memory_order_relaxed);
  c.inserted_bytes = counters_.inserted_bytes.load(std::memory_order_relaxed);
  c.evicted_bytes = counters_.evicted_bytes.load(std::memory_order_relaxed);
  c.corrupt_chunks = counters_.corrupt_chunks.load(std::memory_order_relaxed);
  c.errors = counters_.errors.load(std::memory_order_relaxed);
  c.dropped_writes = counters_.dropped_writes.load(std::memory_order_relaxed);
  c.rejected_writes = counters_.rejected_writes.load(std::memory_order_relaxed);
  c.range_hits = counters_.range_hits.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(mu_);
    c.used_bytes = alloc_.used_bytes();
  }
  c.capacity_bytes = static_cast<uint64_t>(region_fds_.size()) * options_.region_bytes;
  return c;
}

}  // namespace warmfs
