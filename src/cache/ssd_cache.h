// SsdCache: the local-disk BlockCache tier. Chunks live in large region files, indexed by a
// RocksDB database, read and written through io::FileIo (io_uring when available).
//
// Layout of a cache dir (created 0700; files 0600):
//   lock             flock()ed by the owning process, holds its pid
//   regions/NNNNNN   region files of region_bytes; a chunk is a record: its bytes, then a
//                    32-byte trailer (magic, length, CRC32C of the bytes, CRC32C of the key,
//                    the region's fill generation)
//   index/           the RocksDB index (cache/ssd_index.h)
//
// get() looks the key up in the index, reads the record with one positional read and
// checks the trailer and the CRC32C; a record that does not hold up is dropped from the
// index, counted in corrupt_chunks, and reported as a miss. read_range() reads only the
// 16 KiB blocks of the record that hold the range and checks each against its CRC32C, which
// the index entry carries (format 2, docs/ssd-cache.md); a block that fails is a corrupt
// record the same way. put() only queues the chunk for
// the background writer thread (a bounded queue; a put that does not fit is dropped and
// counted), so callers never wait on the disk. The writer appends the record, then writes
// the index entry: after a crash an entry either points at complete data or at data that
// fails its checks, and is dropped when found.
//
// Space and eviction are RegionAllocator's (cache/eviction.h): whole regions are reclaimed,
// new chunks are admitted TinyLFU-style, so scans do not flush the working set. On open the
// accounting is rebuilt from the index; entries of stale generations or that point past the
// end of their region file are dropped then.
//
// Failures degrade, never fail a read: an I/O error (ENOSPC, EROFS, EIO...) is logged (at most
// one line per log_interval), counted in errors, and turns the tier off (gets miss, puts are
// dropped) for error_backoff, after which it tries again.
//
// One process per cache dir: open() fails while another process (or another SsdCache in this
// one) holds the lock.
//
// Thread safe. Lock order: write_mu_, then index_mu_, then mu_; queue_mu_ and warn_mu_ alone. No
// lock is held across file I/O except index_mu_ around RocksDB writes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cache/block_cache.h"
#include "cache/eviction.h"
#include "cache/ssd_index.h"
#include "common/clock.h"
#include "io/file_io.h"
#include "warmfs/result.h"

namespace warmfs {

struct SsdCacheOptions {
  // The cache dir; created (0700) with its parents if missing. Required.
  std::string dir;
  // Bytes of region files at most (the regions all together). Required; at least one region.
  uint64_t capacity_bytes = 0;
  // 64 MiB: large enough that the index has few regions to account for and writes are long
  // sequential appends; small enough that evicting one drops a small part of the cache.
  uint64_t region_bytes = 64ull << 20;
  // Chunks not read for ttl are expired (misses; their regions reclaimed when idle).
  // 0 keeps chunks until space is needed.
  std::chrono::seconds ttl{0};
  // Chunk bytes queued for the writer at most. Puts wait for room (put_wait), so the queue
  // only has to keep the writer busy; 64 MiB does, and bounds what queued chunks that the
  // memory tier has already evicted add to the daemon's memory.
  uint64_t write_queue_bytes = 64ull << 20;
  // A put that finds the queue full waits this long for room before it is dropped (a later
  // miss refills): a cold read faster than the writer slows down to what the disk (or, on a
  // busy machine, the writer thread) takes, rather than leaving chunks out of the tier and
  // fetching them from the bucket again on the next pass. Zero: drop at once.
  std::chrono::milliseconds put_wait{1000};
  // Nice value of the writer thread (see writer_loop); 0 leaves it as the daemon's.
  int writer_nice = -5;
  // Typical chunk size, to size the frequency sketch (capacity / this = chunks held).
  uint64_t expected_chunk_bytes = kDefaultChunkSize;
  // After an I/O error the tier stays off this long, then tries again (ENOSPC may clear).
  std::chrono::seconds error_backoff{60};
  // At most one warning line per interval for repeated failures.
  std::chrono::seconds log_interval{10};
  // I/O implementation; null = io::make_file_io() (io_uring, else pread/pwrite). A test seam.
  std::shared_ptr<io::FileIo> io;
  // Records are written with O_DIRECT, each padded to kDirectAlign: the writer then runs at
  // the device's speed rather than at the page cache's writeback pace (which, on a busy
  // machine, can be slower than a cold read), and chunk files do not fill the page cache
  // twice over the memory tier. Falls back to buffered writes, with one log line, where the file
  // system refuses O_DIRECT. A chunk of kMemoryFileWriteMinBytes or more that is whole pages
  // of the memory file (a download's) is written from there, without a copy, and its trailer
  // block after it.
  bool direct_writes = true;
};

class SsdCache final : public BlockCache {
 public:
  // Records start at multiples of this, so they can be written with O_DIRECT.
  static constexpr uint64_t kDirectAlign = 4096;
  // Chunks this large and up are written from the memory file, without a copy.
  static constexpr uint64_t kMemoryFileWriteMinBytes = 256 << 10;

  // Opens or creates the cache in options.dir and recovers its contents. Fails with a clear
  // message when the dir cannot be created or written, or is in use by another process.
  // clock must outlive the cache.
  static Result<std::unique_ptr<SsdCache>> open(SsdCacheOptions options, Clock& clock);
  // Flushes queued writes, then closes the index and releases the lock.
  ~SsdCache() override;
  SsdCache(const SsdCache&) = delete;
  SsdCache& operator=(const SsdCache&) = delete;

  // The chunk if stored intact for exactly this key; nullptr otherwise (never an error).
  ChunkPtr get(const ChunkKey& key) override;
  // Reads only the checksum blocks of the chunk's record that hold the range (O_DIRECT when
  // aligned) and checks each against its CRC in the index entry; a block that fails is a
  // corrupt record (dropped, counted in corrupt_chunks, a miss). A record whose entry has no
  // block CRCs (format 1) is read and checked whole. Counted in hits (hit_bytes: the range's
  // bytes) and range_hits. promote is not used.
  bool read_range(const ChunkKey& key, uint64_t offset, std::span<std::byte> out,
                  bool* promote = nullptr) override;
  // Queues the chunk for writing, waiting up to put_wait for room in the queue. Dropped when
  // the queue stays full, the tier is degraded, or the chunk does not fit a region.
  void put(const ChunkKey& key, ChunkPtr chunk) override;
  BlockCacheCounters counters() const override;
  void drain() override { flush(); }

  // Waits until every chunk queued before the call is written (or dropped). Also runs the
  // ttl expiry. For tests and unmount.
  void flush();

  bool uses_io_uring() const { return io_->uses_io_uring(); }
  bool degraded() const;
  const SsdCacheOptions& options() const { return options_; }
  // Path of region r's file (tests damage them).
  std::string region_path(uint32_t r) const;

 private:
  struct Pending {
    ChunkKey key;
    ChunkPtr chunk;
  };
  struct Counters {
    std::atomic<uint64_t> hits{0}, hit_bytes{0}, misses{0}, inserted_bytes{0}, evicted_bytes{0},
        corrupt_chunks{0}, errors{0}, dropped_writes{0}, rejected_writes{0}, range_hits{0};
  };
  // Range reads up to this size use a buffer the thread keeps; larger ones allocate.
  static constexpr size_t kRangeBufferMaxBytes = 256 << 10;

  SsdCache(SsdCacheOptions options, Clock& clock, io::UniqueFd lock_fd,
           std::unique_ptr<SsdIndex> index, std::vector<io::UniqueFd> region_fds);
  // Open-time steps (ssd_cache_open.cc).
  Status recover();
  // Writer thread (ssd_cache.cc).
  void writer_loop();
  void write_one(const Pending& p);
  // True when chunk's bytes can go to the disk with O_DIRECT straight from the memory file.
  static bool writes_from_memory_file(const Chunk& chunk);
  void drop_regions(const std::vector<EvictedRegion>& regions);
  void expire();
  // Drops key's entry (if still e) and its accounting.
  void drop_entry(const std::string& key, const SsdIndexEntry& e);
  // Reads, shared by get() and read_range(). find: the entry of key (encoded as enc) if the
  // tier is on and the entry is live; nullopt otherwise (the caller counts the miss).
  std::optional<SsdIndexEntry> find(const ChunkKey& key, const std::string& enc);
  // The record of e, read and checked whole (counts the hit or the miss).
  ChunkPtr read_whole(const std::string& enc, SsdIndexEntry e);
  // True when e's region was refilled or freed since e was written.
  bool stale(const SsdIndexEntry& e) const;
  // A record that failed its checks: counted as corrupt unless stale, dropped, a miss.
  void reject(const std::string& enc, const SsdIndexEntry& e, std::string_view what);
  // A hit of `bytes`: counted, and the entry's read time refreshed (ttl).
  void served(const std::string& enc, const SsdIndexEntry& e, uint64_t bytes);
  // This thread's range read buffer of at least n bytes (n <= kRangeBufferMaxBytes), aligned.
  static std::byte* range_buffer(size_t n);
  // Counts and logs an I/O failure and turns the tier off for error_backoff.
  void fail(const Status& s, std::string_view what);
  void warn_limited(const std::string& line);
  int64_t wall_seconds() const;

  const SsdCacheOptions options_;
  Clock& clock_;
  std::shared_ptr<io::FileIo> io_;
  io::UniqueFd lock_fd_;
  std::unique_ptr<SsdIndex> index_;
  const std::vector<io::UniqueFd> region_fds_;  // one per region slot, fixed

  std::mutex write_mu_;  // serializes writer-side work: write_one() and expire()
  // One record being written, aligned for O_DIRECT; under write_mu_.
  struct FreeAligned {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, FreeAligned> write_buf_;
  size_t write_buf_bytes_ = 0;
  // O_DIRECT descriptors of the regions, opened on a region's first write; under write_mu_.
  std::vector<io::UniqueFd> direct_fds_;
  bool direct_ok_ = true;  // under write_mu_; false once the file system refused O_DIRECT
  // The descriptor to write region r with O_DIRECT, or -1 for buffered writes.
  int direct_fd_locked(uint32_t r);
  // O_DIRECT read descriptors, opened on a region's first read (-1: not yet, or refused).
  // Records written with O_DIRECT are read with it too: straight into the chunk's buffer,
  // with no copy out of the page cache and no page-cache pages to fill and reclaim.
  std::unique_ptr<std::atomic<int>[]> direct_read_fds_;
  std::atomic<bool> direct_reads_ok_{true};
  int direct_read_fd(uint32_t r);
  std::mutex index_mu_;    // serializes index mutations that must read, compare, then write
  mutable std::mutex mu_;  // protects alloc_
  RegionAllocator alloc_;

  std::mutex queue_mu_;               // protects queue_, queued_bytes_, writing_, stopping_
  std::condition_variable queue_cv_;  // writer waits for work or stop
  std::condition_variable idle_cv_;   // the queue shrank: flush() and full put() wait on it
  std::deque<Pending> queue_;
  uint64_t queued_bytes_ = 0;
  bool writing_ = false;
  bool stopping_ = false;

  // Steady-clock nanoseconds until which the tier is off (0: on).
  std::atomic<int64_t> degraded_until_ns_{0};
  std::mutex warn_mu_;  // protects the two fields below
  std::chrono::steady_clock::time_point last_warn_{};
  uint64_t suppressed_warnings_ = 0;

  Counters counters_;
  std::thread writer_;  // last: started once everything above is ready
};

}  // namespace warmfs
