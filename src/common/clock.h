// Time, injected. Production code takes a Clock& so tests can use FakeClock and
// step time by hand (eviction, TTLs, backoff) without sleeping.
#pragma once

#include <chrono>
#include <cstdint>

namespace warmfs {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time, for TTLs and latency.
  virtual std::chrono::steady_clock::time_point now() const = 0;
  // Wall-clock time in seconds since the epoch, for signatures and mtimes.
  virtual std::chrono::system_clock::time_point wall_now() const = 0;
  // Sleep (fake clocks advance instead).
  virtual void sleep_for(std::chrono::nanoseconds d) = 0;
};

class SystemClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point now() const override {
    return std::chrono::steady_clock::now();
  }
  std::chrono::system_clock::time_point wall_now() const override {
    return std::chrono::system_clock::now();
  }
  void sleep_for(std::chrono::nanoseconds d) override;
  // One process-wide instance for production wiring (stateless, so sharing is harmless).
  static SystemClock& instance();
};

}  // namespace warmfs
