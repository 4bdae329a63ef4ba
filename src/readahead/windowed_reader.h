// WindowedReader: the Reader of one open file handle, with sequential read-ahead. Private to
// the readahead layer; ReadPath::open() makes them.
//
// The reader holds, in slots keyed by chunk index, the chunks (or fetches in flight) of its
// current read and of its read-ahead window, so chunks fetched ahead survive eviction from a
// small cache; slots are dropped once the reader has read past them, and on a seek.
//
// Sequential detection: a read is sequential when it starts where the previous read ended,
// or in the previous read's last chunk or the one after, or, while a window is open, anywhere
// from a few chunks behind the stream's head to the end of the window (FUSE delivers the
// kernel's concurrent read-ahead requests out of order). The first sequential read opens a window
// of initial_window_chunks ahead of the read; each sequential read that has to wait for a chunk (a
// miss, or a prefetch still in flight) doubles it, up to max_window_chunks. A read that is not
// sequential closes the window and drops the slots outside its own range, so a random reader
// fetches exactly the chunks it touches. Prefetches go through the global budget and stop when it
// is spent; a prefetch that failed is retried once by the read that needs it. The window is
// fetched in requests of the size the stream's RequestSizer finds best (request_sizer.h), so
// the window over the request size is how many requests the stream keeps in flight.
//
// A small read (a part of one chunk, at most kSmallReadBytes) that is not sequential and whose
// chunk the reader does not hold is first tried, on the reader's thread, against the memory
// tier and then as a range read of the slower tiers (ChunkFetcher::read_small), which reads
// and checks only the blocks that hold it; only a miss there fetches the chunk whole. So a
// random 4 KiB read served by the SSD tier costs one small disk read, not a 1 MiB one and a
// hand-off to a fetch thread. Its bytes are not kept in a slot (they are not a chunk).
//
// Thread safe: mu_ guards the slots and the window. A read holds it to plan (look up slots,
// start fetches, which never block) and to clean up, but not while waiting for a fetch or
// copying bytes, so concurrent reads on one handle overlap.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "readahead/chunk_fetcher.h"
#include "readahead/read_path.h"
#include "readahead/request_sizer.h"

namespace warmfs {

class WindowedReader final : public Reader {
 public:
  WindowedReader(std::shared_ptr<ChunkFetcher> fetcher, ObjectVersion version);
  // Drops the slots; fetches in flight complete into the cache without this reader.
  ~WindowedReader() override;

  Result<size_t> read(uint64_t offset, std::span<std::byte> out) override;
  Result<size_t> read_slices(uint64_t offset, uint64_t length,
                             std::vector<ChunkSlice>& out) override;

  // Current window in chunks (0: not sequential), for tests.
  uint32_t window_chunks() const;

 private:
  struct Slot {
    ChunkPtr chunk;                     // at hand, or
    std::shared_ptr<FetchState> fetch;  // in flight (or finished: its chunk or status)
    uint64_t charged_bytes = 0;         // read-ahead budget, returned at first use
    bool prefetched = false;            // started by read-ahead and not yet used
    // The chunk was in memory when this reader asked for it, or has been read once since
    // it arrived: its bytes count as served from memory (ReadPathCounters).
    bool in_memory = false;
  };

  uint64_t chunk_length(uint64_t index) const;
  // Under mu_: sequential detection, slots for [first, last], window, prefetches. With small
  // (a read of part of one chunk, at most kSmallReadBytes): true, and no slot made, when the
  // read is not sequential and the chunk has no slot, for the caller to try a range read.
  bool plan_locked(uint64_t offset, uint64_t end, uint64_t first, uint64_t last, bool small);
  // Slot for index, started as a demand fetch if there is none. Returns true if the caller
  // will have to wait for it.
  bool ensure_demand_locked(uint64_t index);
  void issue_prefetches_locked(uint64_t last);
  // Gives back budget and counts waste; the caller erases the slot.
  void retire_locked(Slot& slot);
  // After a read failed at chunk `failed`: drops the slots in (failed, last] that it left
  // unread and unresolved. Takes mu_.
  void drop_unread_after(uint64_t failed, uint64_t last);
  // Waits for chunk index; retries a failed prefetch once as a demand fetch. *in_memory says
  // whether the chunk was at hand in memory (see Slot::in_memory).
  Result<ChunkPtr> obtain(uint64_t index, bool* in_memory);

  // How far behind the stream's head a read may start and still belong to it.
  static constexpr uint64_t kReorderSlackChunks = 8;
  // Reads of at most this many bytes that are not part of a stream try a range read of the
  // slower tiers before fetching their chunk whole (ChunkFetcher::read_small): a random read
  // of a few kilobytes then costs the disk a block or two rather than a whole chunk. 128 KiB:
  // the kernel's read-ahead unit, above which reading the whole chunk costs little more.
  static constexpr uint64_t kSmallReadBytes = 128 << 10;

  const std::shared_ptr<ChunkFetcher> fetcher_;
  const ObjectVersion version_;
  const uint64_t chunk_size_;
  const uint64_t chunk_count_;

  // Protects everything below. Lock order: mu_ before the fetcher's locks (acquire() is
  // called under it), which come before the cache's and the pool's (chunk_fetcher.h).
  mutable std::mutex mu_;
  ChunkKey key_;  // this version's key; index rewritten on each use
  std::map<uint64_t, Slot> slots_;
  uint32_t window_ = 0;
  bool counted_ = false;  // counted among the fetcher's open streams (window_ > 0)
  // Sizes this stream's read-ahead requests; made when the first window opens (shared with
  // the fetch threads, which report completions to it). Null when sizing is off.
  std::shared_ptr<RequestSizer> sizer_;
  uint64_t ahead_end_ = 0;  // one past the last chunk read-ahead has covered
  bool has_prev_ = false;
  uint64_t prev_end_ = 0;
  uint64_t prev_last_chunk_ = 0;
};

}  // namespace warmfs
