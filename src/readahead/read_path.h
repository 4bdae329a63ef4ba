// The read path below the filesystem core: chunk fetching and read-ahead.
//
// ReadPath is shared by all open files. It gets chunk i of an object version from the block
// cache, or else from the object store with one request however many readers miss on it at
// once (single flight), and puts fetched chunks into the cache. Range GETs carry If-Match
// with the version's ETag, so bytes of two versions never mix.
//
// A Reader is one open file handle's view. It detects sequential access and keeps a window
// of chunks in flight ahead of the reader: the window starts small, doubles each time the
// reader has to wait for a chunk, is capped per reader, and resets when the reader seeks
// away. All readers together hold at most ReadaheadOptions::max_inflight_bytes of chunks
// fetched ahead (a global budget, so many handles cannot exhaust memory). A random reader
// gets exactly the chunks its reads touch.
//
// Thread safe: ReadPath fully; a Reader may be used from several threads (FUSE may send
// reads of one handle concurrently), with internal locking.
//
// Lifetimes: destroying the ReadPath fails fetches still queued with kCancelled and waits for
// the ones running. A Reader may be destroyed at any time, with fetches pending (they finish
// into the cache), even after its ReadPath; it must not read after the ReadPath is gone.
// Implementation: chunk_fetcher.h (single flight, budget), windowed_reader.h (windows).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cache/block_cache.h"
#include "objstore/object_store.h"
#include "warmfs/result.h"

namespace warmfs {

class OrderPrefetcher;
struct OrderOptions;

struct ObjectVersion {
  std::string key;   // full key in the bucket
  std::string etag;  // the version; empty means "whatever the bucket has" (no If-Match)
  uint64_t size = 0;
};

struct ReadaheadOptions {
  uint64_t chunk_size = kDefaultChunkSize;
  // First window, in chunks, once two reads in a row are sequential.
  uint32_t initial_window_chunks = 4;
  // Largest window of one reader: 256 MiB keeps a reader at 1 GB/s fed across a quarter-second
  // stall, with four requests of max_request_bytes in flight. A stream's window is also held
  // to its share of max_inflight_bytes among the streams open
  // (ChunkFetcher::window_cap_chunks). 256 rather than 128: a cold sequential read is faster
  // with it on a CPU-bound origin (docs/benchmark-misses.md, "Cold sequential").
  uint32_t max_window_chunks = 256;
  // All readers together: chunks fetched ahead and not yet read. 256 MiB is a small part of a
  // GPU node's memory and enough for several sequential streams at full speed.
  uint64_t max_inflight_bytes = 256ull << 20;
  // Threads issuing range GETs; each holds one request at a time (requests are latency bound).
  uint32_t fetch_threads = 64;
  // Read-ahead fetches runs of consecutive chunks with one range GET of up to this many bytes:
  // per-request cost (first-byte latency, server work, the request charge) is paid once per
  // run, not per chunk. Chunks are handed to readers as their bytes land, so a long request
  // does not make a reader wait for its end. 64 MiB rather than less: fewer requests leave
  // more CPU for the bytes on a CPU-bound origin (docs/benchmark-misses.md).
  uint64_t max_request_bytes = 64ull << 20;
  // Each sequential stream sizes its read-ahead requests by measuring its throughput
  // (RequestSizer, readahead/request_sizer.h): it starts at initial_request_bytes and halves
  // the size (more requests in flight) while that raises throughput, down to
  // min_request_bytes, or doubles it while that does, up to max_request_bytes. An object store
  // that holds each connection to tens of MB/s needs many requests in flight; a local origin
  // short of CPU does better with few large ones. 32 MiB: eight requests in flight in a
  // 256 MiB window (400 MB/s at 50 MB/s a connection) from the start; on an origin short of
  // CPU it costs some throughput against 64 MiB (0.93x, within the noise), 16 MiB cost more,
  // and a 64 MiB start left a capped stream at four connections until the climb had measured
  // twice (docs/benchmark-misses.md, "Cold streams on an object store's shape"). 0 turns the
  // sizing off (requests of max_request_bytes, at most half the window).
  uint64_t initial_request_bytes = 32ull << 20;
  uint64_t min_request_bytes = 4ull << 20;
  // Chunks fetched from the bucket wait, after their readers have them, for the SSD tier's
  // write queue to take them. Up to this many bytes of them are free; beyond it they count
  // against max_inflight_bytes, so read-ahead slows to what the disk takes rather than
  // holding an unbounded pile of chunks in memory (each fetch thread could hold a request's
  // worth). A short writer stall costs nothing; a long one slows the cold read. 256 MiB: the
  // 64 MiB requests of four streams landing at once pass without holding read-ahead back
  // (a smaller allowance cuts their windows and multiplies their requests;
  // docs/benchmark-misses.md, "Memory").
  uint64_t handoff_allowance_bytes = 256ull << 20;
};

struct ReadPathCounters {
  uint64_t cache_hit_bytes = 0;  // bytes of the chunks found in the block cache
  // Bytes readers were served from chunks already in memory when they read them (found in
  // the memory tier, or read before by the same handle), as opposed to bytes they waited
  // for from a slower tier or the bucket. A 4 KiB read of a cached 1 MiB chunk counts 4 KiB.
  uint64_t memory_served_bytes = 0;
  uint64_t fetched_bytes = 0;  // bytes fetched from the bucket
  uint64_t fetch_requests = 0;
  uint64_t prefetched_chunks = 0;       // chunks requested by read-ahead
  uint64_t prefetch_wasted_chunks = 0;  // fetched ahead but never read
  // Right now: read-ahead budget in use (fetched ahead and unread, or waiting for the SSD
  // tier to take it beyond handoff_allowance_bytes).
  uint64_t inflight_bytes = 0;
  uint64_t fetch_errors = 0;
  // Small reads served by a range read of a slower tier (only the blocks that hold them),
  // and the chunks those reads then fetched whole to promote them into memory.
  uint64_t range_reads = 0;
  uint64_t range_promotions = 0;
  // Right now: chunks asked of the bucket and not yet fetched (queued or being fetched).
  // Zero once every fetch a read started has ended (tests wait for it).
  uint64_t chunks_in_flight = 0;
};

// A piece of a read: bytes [offset, offset + length) of a chunk. Holding it keeps the chunk.
struct ChunkSlice {
  ChunkPtr chunk;
  size_t offset = 0;
  size_t length = 0;
};

class Reader {
 public:
  virtual ~Reader() = default;
  // As read(), but hands back the pieces of chunks that hold the bytes, in order, instead of
  // copying them (the FUSE adapter replies straight from them). out is cleared first.
  virtual Result<size_t> read_slices(uint64_t offset, uint64_t length,
                                     std::vector<ChunkSlice>& out) = 0;
  // Reads [offset, offset + out.size()) clipped at the object's size; returns bytes read
  // (0 at or past EOF). kPreconditionFailed if the object changed under this version.
  virtual Result<size_t> read(uint64_t offset, std::span<std::byte> out) = 0;
};

class ReadPath {
 public:
  // store and cache must outlive the ReadPath. bucket names the cache keys. fast_cache, when
  // given, is the part of `cache` that answers without waiting on a device (the memory tier
  // of a memory-over-SSD stack): readers consult only it while planning, and the slower
  // tiers are read by the fetch threads, in parallel and off the reader's lock.
  ReadPath(ObjectStore& store, BlockCache& cache, std::string bucket, ReadaheadOptions options,
           BlockCache* fast_cache = nullptr);
  ~ReadPath();
  ReadPath(const ReadPath&) = delete;
  ReadPath& operator=(const ReadPath&) = delete;

  // A reader of one object version (one per open file handle). Cheap: no request is made
  // until the first read.
  std::unique_ptr<Reader> open(ObjectVersion version);
  // Starts fetching the first max_bytes of version into the cache, without waiting (a later
  // reader finds the chunks cached or joins their fetch). For files a reader is about to
  // open: a directory of small files read in order gets more requests in flight than its
  // readers bring. Not charged to the read-ahead budget: the caller bounds how much it warms.
  void warm(const ObjectVersion& version, uint64_t max_bytes);
  ReadPathCounters counters() const;
  const ReadaheadOptions& options() const;
  // A prefetcher that follows orders readers announce (order_prefetch.h), over this read
  // path's fetcher and budget. resolve maps a path below the mount's root to its version;
  // key_prefix + path is its key. It may outlive the ReadPath only if it is not used after.
  std::unique_ptr<OrderPrefetcher> make_order_prefetcher(
      std::string key_prefix, std::function<Result<ObjectVersion>(const std::string&)> resolve,
      const OrderOptions& options);

  struct Impl;  // defined in read_path.cc and friends

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace warmfs
