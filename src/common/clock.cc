#include "common/clock.h"

#include <thread>

namespace warmfs {

void SystemClock::sleep_for(std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); }

SystemClock& SystemClock::instance() {
  static SystemClock clock;
  return clock;
}

}  // namespace warmfs
