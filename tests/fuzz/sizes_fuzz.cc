// Sizes and durations as users and config files write them (common/sizes.h): "512M", "1.5T",
// "30s". The input is one such text. Any text parses or is refused; a size never overflows,
// a duration is finite and non-negative, and a formatted size reads back near itself.
#include <cmath>

#include "common/sizes.h"
#include "fuzz_util.h"

using namespace warmfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::as_view(data, size);
  if (auto bytes = parse_size(text)) {
    FUZZ_CHECK(*bytes <= 9200000000000000000ull);
    const std::string human = format_size(*bytes);  // "1.5 GiB"
    std::string compact;
    for (char c : human) {
      if (c != ' ') compact.push_back(c);
    }
    auto back = parse_size(compact);
    FUZZ_CHECK(back.has_value());
    // One decimal place of the unit: within 5% (plus rounding of the last unit).
    const double want = static_cast<double>(*bytes);
    FUZZ_CHECK(std::fabs(static_cast<double>(*back) - want) <= want * 0.05 + 1);
  }
  if (auto seconds = parse_duration_seconds(text)) {
    FUZZ_CHECK(std::isfinite(*seconds) && *seconds >= 0 && *seconds <= kMaxDurationSeconds);
  }
  return 0;
}
