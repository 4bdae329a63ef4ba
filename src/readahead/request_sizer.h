// RequestSizer: how many chunks one range GET of a sequential stream asks for, found by
// measuring the stream's throughput. Private to the readahead layer (windowed_reader.h).
//
// A stream keeps a window of chunks in flight ahead of its reader; the window is cut into
// requests of request_chunks() each, so the window divided by the request size is how many
// requests (connections) the stream has in flight. Which size is best depends on the origin:
// - an object store holds each connection to a few tens of MB/s and answers after 20-30 ms:
//   the stream needs many requests in flight, each small enough that the window holds them;
// - a local origin that is short of CPU (s3rver) gives one connection all it has: more
//   requests only add per-request work, and larger ones do better.
// So the size is climbed, not configured. The sizer measures the stream's throughput (bytes
// of its completed requests per second) at one size, then halves the size (twice as many
// requests in flight) and measures again: while throughput rises by at least `gain`, it keeps
// halving, down to min_chunks. If the first halving brings nothing, it tries doubling instead
// (up to max_chunks), and keeps doubling while that gains. Once a step brings nothing, the
// sizer goes back to the last good size and holds it for the stream's life.
//
// A measurement covers the completions of requests issued at one size (a generation): the
// first one starts the clock, and a verdict needs at least `samples` more and one round of the
// requests in flight (window / size) more, spread over at least min_span, so a burst of
// requests issued together is not taken for throughput. A change of window (it grows while
// the stream starts, and shrinks to its share when other streams open) restarts the
// measurement at the same size: the two figures compared are of one window.
//
// Thread safe (completions arrive on fetch threads). Time is passed in, so tests drive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace warmfs {

class RequestSizer {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    uint32_t initial_chunks = 16;  // the first size tried
    uint32_t min_chunks = 4;
    uint32_t max_chunks = 64;  // the request cap (ReadaheadOptions::max_request_bytes)
    uint32_t samples = 4;      // completions after the first, at least, per verdict
    double gain = 1.2;         // a step is kept when throughput rises by this factor
    Clock::duration min_span = std::chrono::milliseconds(50);
  };

  enum class State { kBaseline, kProbeDown, kProbeUp, kHold };

  explicit RequestSizer(Options options);

  // Chunks per request for a stream whose window is `window` chunks: the current size, held
  // to half the window (so at least two requests are in flight) and at least one chunk. A
  // window other than the last one seen restarts the measurement.
  uint32_t request_chunks(uint32_t window);
  // The generation requests issued now belong to; pass it back with their completion.
  uint64_t generation() const;
  // A request of generation `generation` finished at `now` with `bytes` fetched. Completions
  // of an older generation are not counted.
  void completed(uint64_t generation, uint64_t bytes, Clock::time_point now);

  // For tests and logs.
  uint32_t size_chunks() const;
  State state() const;
  // Throughput (bytes/s) of the size held now, once measured; 0 before.
  double best_rate() const;

 private:
  // Under mu_: the size used for window_ (see request_chunks()).
  uint32_t effective_locked() const;
  // Under mu_: starts measuring `size` anew.
  void restart_locked(uint32_t size);
  void verdict_locked(double rate);

  const Options options_;
  mutable std::mutex mu_;
  State state_ = State::kBaseline;
  uint32_t size_;        // chunks per request (before the window's limit)
  uint32_t window_ = 0;  // last window seen
  uint64_t generation_ = 0;
  // The measurement of this generation.
  bool started_ = false;  // its first completion has come
  Clock::time_point first_;
  Clock::time_point last_;
  uint64_t bytes_ = 0;  // after the first completion
  uint32_t count_ = 0;  // completions after the first
  // The last size kept, and its throughput.
  uint32_t base_size_ = 0;
  double base_rate_ = 0;
  bool went_down_ = false;  // a halving was kept: no doubling is tried
};

}  // namespace warmfs
