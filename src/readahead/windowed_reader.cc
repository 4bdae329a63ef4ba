#include "readahead/windowed_reader.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <utility>

#include "common/log.h"

namespace warmfs {

WindowedReader::WindowedReader(std::shared_ptr<ChunkFetcher> fetcher, ObjectVersion version)
    : fetcher_(std::move(fetcher)),
      version_(std::move(version)),
      chunk_size_(fetcher_->options().chunk_size),
      chunk_count_((version_.size + chunk_size_ - 1) / chunk_size_) {
  key_.bucket = fetcher_->bucket();
  key_.key = version_.key;
  key_.etag = version_.etag;
}

WindowedReader::~WindowedReader() {
  if (sizer_ && sizer_->best_rate() > 0) {
    log::debug("read-ahead of {}: requests of {} chunks ({}), {:.0f} MB/s", version_.key,
               sizer_->size_chunks(),
               sizer_->state() == RequestSizer::State::kHold ? "held" : "still measuring",
               sizer_->best_rate() / 1e6);
  }
  std::lock_guard lock(mu_);
  if (counted_) fetcher_->stream_closed();
  for (auto& [index, slot] : slots_) retire_locked(slot);
  slots_.clear();
}

uint32_t WindowedReader::window_chunks() const {
  std::lock_guard lock(mu_);
  return window_;
}

uint64_t WindowedReader::chunk_length(uint64_t index) const {
  return std::min(chunk_size_, version_.size - index * chunk_size_);
}

void WindowedReader::retire_locked(Slot& slot) {
  fetcher_->release(slot.charged_bytes);
  slot.charged_bytes = 0;
  if (slot.prefetched) fetcher_->count_wasted();
  slot.prefetched = false;
}

Result<size_t> WindowedReader::read(uint64_t offset, std::span<std::byte> out) {
  std::vector<ChunkSlice> slices;
  WARMFS_ASSIGN_OR_RETURN(size_t n, read_slices(offset, out.size(), slices));
  size_t copied = 0;
  for (const ChunkSlice& s : slices) {
    std::memcpy(out.data() + copied, s.chunk->bytes.data() + s.offset, s.length);
    copied += s.length;
  }
  return n;
}

Result<size_t> WindowedReader::read_slices(uint64_t offset, uint64_t length,
                                           std::vector<ChunkSlice>& out) {
  out.clear();
  if (length == 0 || offset >= version_.size) return size_t{0};
  const uint64_t len = std::min<uint64_t>(length, version_.size - offset);
  const uint64_t end = offset + len;
  const uint64_t first = offset / chunk_size_;
  const uint64_t last = (end - 1) / chunk_size_;
  // A small read within one chunk, of less than the chunk: if it turns out not to be part of
  // a stream, it may be served by a range read of a slower tier.
  const bool small = first == last && len <= kSmallReadBytes && len < chunk_length(first);
  bool range = false;
  {
    std::lock_guard lock(mu_);
    range = plan_locked(offset, end, first, last, small);
  }
  if (range) {
    const uint64_t base = first * chunk_size_;
    bool whole = false;
    ChunkPtr c = fetcher_->read_small(ChunkKey{key_.bucket, version_.key, version_.etag, first},
                                      chunk_length(first), offset - base, len, &whole);
    if (c && !whole) {
      out.push_back(ChunkSlice{std::move(c), 0, static_cast<size_t>(len)});
      return static_cast<size_t>(len);
    }
    if (c) {
      // In memory after all: held in a slot like any chunk found there.
      std::lock_guard lock(mu_);
      if (slots_.count(first) == 0) {
        Slot slot;
        slot.chunk = std::move(c);
        slot.in_memory = true;
        slots_.emplace(first, std::move(slot));
      }
    }
    // Otherwise obtain() below starts the chunk's demand fetch.
  }
  size_t total = 0;
  uint64_t from_memory = 0;
  for (uint64_t i = first; i <= last; ++i) {
    bool in_memory = false;
    Result<ChunkPtr> chunk = obtain(i, &in_memory);
    if (!chunk.is_ok()) {
      drop_unread_after(i, last);
      out.clear();
      return std::move(chunk).take_status();
    }
    const uint64_t base = i * chunk_size_;
    const uint64_t from = std::max(offset, base) - base;
    const uint64_t to = std::min(end, base + chunk_length(i)) - base;
    out.push_back(ChunkSlice{std::move(chunk).value(), static_cast<size_t>(from),
                             static_cast<size_t>(to - from)});
    total += to - from;
    if (in_memory) from_memory += to - from;
  }
  fetcher_->count_served_from_memory(from_memory);
  {
    // Drop what this read has gone past; the chunk it ended in stays for the next read.
    std::lock_guard lock(mu_);
    const auto stop = slots_.lower_bound(end / chunk_size_);
    for (auto it = slots_.begin(); it != stop;) {
      retire_locked(it->second);
      it = slots_.erase(it);
    }
  }
  return total;
}

void WindowedReader::drop_unread_after(uint64_t failed, uint64_t last) {
  // The demand fetches this read started for chunks after the failed one will not be waited
  // for; should they fail, their failure must not be served to a later read as its own.
  std::lock_guard lock(mu_);
  for (auto it = slots_.upper_bound(failed); it != slots_.end() && it->first <= last;) {
    if (it->second.chunk) {
      ++it;
      continue;
    }
    retire_locked(it->second);
    it = slots_.erase(it);
  }
}

bool WindowedReader::plan_locked(uint64_t offset, uint64_t end, uint64_t first, uint64_t last,
                                 bool small) {
  const ReadaheadOptions& o = fetcher_->options();
  const bool was_open = window_ > 0;
  // With a window open, the kernel's concurrent read-ahead requests arrive out of order:
  // any read between a little behind the stream's head and the end of the window belongs
  // to the stream. Without one, only a read that continues the previous one does.
  const bool in_stream = was_open && first + kReorderSlackChunks >= prev_last_chunk_ &&
                         first <= std::max(ahead_end_, prev_last_chunk_ + 1);
  const bool sequential = has_prev_ && (in_stream || offset == prev_end_ ||
                                        first == prev_last_chunk_ || first == prev_last_chunk_ + 1);
  if (sequential && has_prev_ && end < prev_end_) {
    // A straggler behind the head: the stream's position stays where it is.
  } else {
    prev_end_ = end;
    prev_last_chunk_ = last;
  }
  has_prev_ = true;
  if (!sequential) {
    window_ = 0;
    ahead_end_ = 0;
    for (auto it = slots_.begin(); it != slots_.end();) {
      if (it->first >= first && it->first <= last) {
        ++it;
        continue;
      }
      retire_locked(it->second);
      it = slots_.erase(it);
    }
  } else if (!was_open) {
    window_ = o.initial_window_chunks;
    if (!sizer_ && o.initial_request_bytes != 0) {
      RequestSizer::Options so;
      auto chunks = [&](uint64_t bytes) {
        return static_cast<uint32_t>(std::clamp<uint64_t>(bytes / chunk_size_, 1, UINT32_MAX));
      };
      so.max_chunks = chunks(o.max_request_bytes);
      so.min_chunks = chunks(o.min_request_bytes);
      so.initial_chunks = chunks(o.initial_request_bytes);
      sizer_ = std::make_shared<RequestSizer>(so);
    }
  }
  // A small read outside any stream, of a chunk this reader does not hold: left to the
  // caller's range read (no fetch started here).
  const bool range = small && !sequential && slots_.count(first) == 0;
  bool waits = false;
  for (uint64_t i = first; i <= last && !range; ++i) waits |= ensure_demand_locked(i);
  if (sequential && was_open && waits) {
    window_ = std::min(window_ * 2, fetcher_->window_cap_chunks());
  }
  if ((window_ > 0) != counted_) {
    counted_ = window_ > 0;
    if (counted_) {
      fetcher_->stream_opened();
    } else {
      fetcher_->stream_closed();
    }
  }
  if (window_ > 0) issue_prefetches_locked(last);
  return range;
}

bool WindowedReader::ensure_demand_locked(uint64_t index) {
  if (auto it = slots_.find(index); it != slots_.end()) {
    const Slot& s = it->second;
    return !s.chunk && (!s.fetch->done() || !s.fetch->chunk());
  }
  key_.index = index;
  ChunkRef ref = fetcher_->acquire(key_, chunk_length(index), ChunkFetcher::Mode::kDemand);
  const bool miss = !ref.chunk;
  Slot slot;
  slot.in_memory = !miss;
  slot.chunk = std::move(ref.chunk);
  slot.fetch = std::move(ref.fetch);
  slots_.emplace(index, std::move(slot));
  return miss;
}

void WindowedReader::issue_prefetches_locked(uint64_t last) {
  // A window grown while this stream was alone shrinks to its share when others open.
  const uint64_t window = std::min<uint64_t>(window_, fetcher_->window_cap_chunks());
  const uint64_t stop = std::min(chunk_count_, last + 1 + window);
  uint64_t i = std::max(last + 1, ahead_end_);
  // Chunks another stream of this object already has or is fetching join the window for
  // free; only the ones past them need requests, and they are what the batch counts. (Else a
  // stream trailing another would top its window up with runs cut to the chunk or two the
  // leader has not reached yet.)
  for (; i < stop; ++i) {
    if (slots_.count(i) != 0) continue;
    key_.index = i;
    ChunkRef ref = fetcher_->acquire(key_, chunk_length(i), ChunkFetcher::Mode::kJoin);
    if (ref.empty()) break;
    Slot slot;
    slot.in_memory = ref.chunk != nullptr;
    slot.chunk = std::move(ref.chunk);
    slot.fetch = std::move(ref.fetch);
    slots_.emplace(i, std::move(slot));
  }
  ahead_end_ = std::max(ahead_end_, i);
  // Top the window up in batches rather than a chunk per read, so consecutive chunks can
  // share a request; wait while enough is still ahead of the reader.
  const ReadaheadOptions& o = fetcher_->options();
  const uint64_t per_request = std::max<uint64_t>(1, o.max_request_bytes / chunk_size_);
  const uint64_t batch =
      sizer_
          ? std::min<uint64_t>(per_request, sizer_->request_chunks(static_cast<uint32_t>(window)))
          : std::max<uint64_t>(1, std::min<uint64_t>(window / 2, per_request));
  if (i > last + 1 && stop < chunk_count_ && stop < i + batch) return;
  // Many streams share the budget: wait until it covers a whole batch (or half the budget,
  // if that is less), rather than taking back a chunk at a time as readers free it, which
  // would cut the requests down to a chunk each.
  if (i < stop) {
    const uint64_t want = std::min<uint64_t>(batch, stop - i) * chunk_size_;
    if (fetcher_->budget_free() < std::min(want, o.max_inflight_bytes / 2)) return;
  }
  std::vector<PendingFetch> pending;
  for (; i < stop; ++i) {
    if (slots_.count(i) != 0) continue;
    key_.index = i;
    ChunkRef ref =
        fetcher_->acquire(key_, chunk_length(i), ChunkFetcher::Mode::kPrefetch, &pending);
    if (ref.empty()) break;  // budget spent: try again on a later read
    Slot slot;
    slot.charged_bytes = ref.charged_bytes;
    slot.prefetched = ref.charged_bytes > 0;
    slot.in_memory = ref.chunk != nullptr;
    slot.chunk = std::move(ref.chunk);
    slot.fetch = std::move(ref.fetch);
    slots_.emplace(i, std::move(slot));
  }
  ahead_end_ = std::max(ahead_end_, i);
  if (pending.empty()) return;
  std::function<void(uint64_t)> on_fetched;
  if (sizer_) {
    on_fetched = [sizer = sizer_, generation = sizer_->generation()](uint64_t bytes) {
      sizer->completed(generation, bytes, RequestSizer::Clock::now());
    };
  }
  fetcher_->submit(std::move(pending), {}, batch * chunk_size_, std::move(on_fetched));
}

Result<ChunkPtr> WindowedReader::obtain(uint64_t index, bool* in_memory) {
  std::shared_ptr<FetchState> fetch;
  // Takes the slot's chunk or fetch, starting a demand fetch if the slot is gone (a seek by a
  // concurrent read of this handle may have dropped it).
  auto take = [&]() -> ChunkPtr {
    auto it = slots_.find(index);
    if (it == slots_.end()) {
      ensure_demand_locked(index);
      it = slots_.find(index);
    }
    Slot& s = it->second;
    fetcher_->release(s.charged_bytes);  // read now: no longer ahead
    s.charged_bytes = 0;
    s.prefetched = false;
    *in_memory = s.in_memory;
    s.in_memory = true;  // a later read of this chunk finds it here
    fetch = s.fetch;
    return s.chunk;
  };
  auto drop_if_failed_locked = [&]() {
    auto it = slots_.find(index);
    if (it != slots_.end() && it->second.fetch == fetch) slots_.erase(it);
  };
  {
    std::lock_guard lock(mu_);
    if (ChunkPtr c = take()) return c;
  }
  fetch->wait();
  if (fetch->chunk()) return fetch->chunk();
  // A failed read-ahead is retried once, as a demand fetch; a failed demand fetch is final.
  const bool retry = fetch->prefetch() && fetch->status().code() != Errc::kCancelled;
  {
    std::lock_guard lock(mu_);
    drop_if_failed_locked();
    if (!retry) return fetch->status();
    if (ChunkPtr c = take()) return c;
  }
  fetch->wait();
  if (fetch->chunk()) return fetch->chunk();
  std::lock_guard lock(mu_);
  drop_if_failed_locked();
  return fetch->status();
}

}  // namespace warmfs
