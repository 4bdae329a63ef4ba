#include "upload/part_plan.h"

namespace warmfs {

bool PartPlan::valid_base(uint64_t base_size) {
  return base_size >= (5ull << 20) && base_size <= (10ull << 20);
}

uint64_t PartPlan::part_size(int n) const {
  const int step = (n - 1) / kPartsPerStep;
  return base_ << step;
}

uint64_t PartPlan::part_offset(int n) const {
  const int step = (n - 1) / kPartsPerStep;
  const uint64_t within = static_cast<uint64_t>((n - 1) % kPartsPerStep);
  // Steps before this one hold 1000 * base * (2^step - 1) bytes.
  const uint64_t before = uint64_t{kPartsPerStep} * base_ * ((uint64_t{1} << step) - 1);
  return before + within * (base_ << step);
}

int PartPlan::part_at(uint64_t offset) const {
  for (int step = 0; step < 10; ++step) {
    const uint64_t step_start = uint64_t{kPartsPerStep} * base_ * ((uint64_t{1} << step) - 1);
    const uint64_t step_end = uint64_t{kPartsPerStep} * base_ * ((uint64_t{2} << step) - 1);
    if (offset < step_end) {
      return step * kPartsPerStep + 1 + static_cast<int>((offset - step_start) / (base_ << step));
    }
  }
  return 10001;
}

int PartPlan::parts_for(uint64_t size) const { return size == 0 ? 1 : part_at(size - 1); }

}  // namespace warmfs
