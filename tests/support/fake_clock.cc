#include "support/fake_clock.h"

namespace warmfs {

FakeClock::FakeClock()
    : now_(std::chrono::steady_clock::time_point(std::chrono::hours(1000))),
      wall_(std::chrono::system_clock::time_point(std::chrono::seconds(kDefaultWallSeconds))) {}

std::chrono::steady_clock::time_point FakeClock::now() const {
  std::lock_guard lock(mu_);
  return now_;
}

std::chrono::system_clock::time_point FakeClock::wall_now() const {
  std::lock_guard lock(mu_);
  return wall_;
}

void FakeClock::sleep_for(std::chrono::nanoseconds d) {
  std::lock_guard lock(mu_);
  slept_ += d;
  now_ += d;
  wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
}

void FakeClock::advance(std::chrono::nanoseconds d) {
  std::lock_guard lock(mu_);
  now_ += d;
  wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
}

void FakeClock::set_wall(std::chrono::system_clock::time_point t) {
  std::lock_guard lock(mu_);
  wall_ = t;
}

std::chrono::nanoseconds FakeClock::slept() const {
  std::lock_guard lock(mu_);
  return slept_;
}

}  // namespace warmfs
