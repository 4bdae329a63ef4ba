// FakeClock: a Clock that only moves when told to, for TTL, eviction and backoff tests.
//
// now() starts at an arbitrary fixed point, wall_now() at 2024-01-01T00:00:00Z (both
// settable). sleep_for() advances both instead of sleeping, so code that backs off runs
// instantly and the test sees how long it would have waited (slept()).
//
// Thread safe: mu_ guards the times.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

#include "common/clock.h"

namespace warmfs {

class FakeClock final : public Clock {
 public:
  static constexpr int64_t kDefaultWallSeconds = 1704067200;  // 2024-01-01T00:00:00Z

  FakeClock();

  std::chrono::steady_clock::time_point now() const override;
  std::chrono::system_clock::time_point wall_now() const override;
  // Advances the clock by d at once.
  void sleep_for(std::chrono::nanoseconds d) override;

  // Moves both clocks forward by d.
  void advance(std::chrono::nanoseconds d);
  void set_wall(std::chrono::system_clock::time_point t);
  // Total time passed to sleep_for().
  std::chrono::nanoseconds slept() const;

 private:
  mutable std::mutex mu_;  // protects the three fields below
  std::chrono::steady_clock::time_point now_;
  std::chrono::system_clock::time_point wall_;
  std::chrono::nanoseconds slept_{0};
};

}  // namespace warmfs
