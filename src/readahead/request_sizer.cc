#include "readahead/request_sizer.h"

#include <algorithm>

namespace warmfs {

namespace {
RequestSizer::Options sanitize(RequestSizer::Options o) {
  o.max_chunks = std::max<uint32_t>(1, o.max_chunks);
  o.min_chunks = std::clamp<uint32_t>(o.min_chunks, 1, o.max_chunks);
  o.initial_chunks = std::clamp(o.initial_chunks, o.min_chunks, o.max_chunks);
  o.samples = std::max<uint32_t>(1, o.samples);
  return o;
}
}  // namespace

RequestSizer::RequestSizer(Options options)
    : options_(sanitize(options)), size_(options_.initial_chunks) {}

uint32_t RequestSizer::effective_locked() const {
  if (window_ == 0) return size_;
  return std::max<uint32_t>(1, std::min(size_, window_ / 2));
}

void RequestSizer::restart_locked(uint32_t size) {
  size_ = size;
  ++generation_;
  started_ = false;
  bytes_ = 0;
  count_ = 0;
}

uint32_t RequestSizer::request_chunks(uint32_t window) {
  std::lock_guard lock(mu_);
  if (window != window_) {
    window_ = window;
    restart_locked(size_);
  }
  return effective_locked();
}

uint64_t RequestSizer::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

uint32_t RequestSizer::size_chunks() const {
  std::lock_guard lock(mu_);
  return effective_locked();
}

RequestSizer::State RequestSizer::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

double RequestSizer::best_rate() const {
  std::lock_guard lock(mu_);
  return base_rate_;
}

void RequestSizer::completed(uint64_t generation, uint64_t bytes, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (state_ == State::kHold || generation != generation_) return;
  if (!started_) {
    started_ = true;
    first_ = now;
    return;
  }
  bytes_ += bytes;
  ++count_;
  last_ = now;
  // One round of the requests in flight at least, so a burst issued together is not a rate.
  const uint32_t in_flight = window_ == 0 ? 1 : std::max<uint32_t>(1, window_ / effective_locked());
  if (count_ < std::max(options_.samples, in_flight) || last_ - first_ < options_.min_span) return;
  const double seconds = std::chrono::duration<double>(last_ - first_).count();
  verdict_locked(static_cast<double>(bytes_) / seconds);
}

void RequestSizer::verdict_locked(double rate) {
  const uint32_t size = effective_locked();
  const bool gained = rate >= options_.gain * base_rate_;
  auto can_halve = [&](uint32_t s) { return s / 2 >= options_.min_chunks && s / 2 < s; };
  auto can_double = [&](uint32_t s) {
    return s * 2 <= options_.max_chunks && (window_ == 0 || s * 2 <= window_ / 2);
  };
  auto hold = [&](uint32_t s) {
    state_ = State::kHold;
    restart_locked(s);
  };
  switch (state_) {
    case State::kBaseline:
      base_size_ = size;
      base_rate_ = rate;
      if (can_halve(size)) {
        state_ = State::kProbeDown;
        restart_locked(size / 2);
      } else if (can_double(size)) {
        state_ = State::kProbeUp;
        restart_locked(size * 2);
      } else {
        hold(size);
      }
      return;
    case State::kProbeDown:
      if (gained) {
        went_down_ = true;
        base_size_ = size;
        base_rate_ = rate;
        if (can_halve(size)) {
          restart_locked(size / 2);
        } else {
          hold(size);
        }
      } else if (!went_down_ && can_double(base_size_)) {
        state_ = State::kProbeUp;
        restart_locked(base_size_ * 2);
      } else {
        hold(base_size_);
      }
      return;
    case State::kProbeUp:
      if (gained) {
        base_size_ = size;
        base_rate_ = rate;
        if (can_double(size)) {
          restart_locked(size * 2);
        } else {
          hold(size);
        }
      } else {
        hold(base_size_);
      }
      return;
    case State::kHold:
      return;
  }
}

}  // namespace warmfs
