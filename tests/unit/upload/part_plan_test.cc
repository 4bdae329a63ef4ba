#include "upload/part_plan.h"

#include <catch2/catch.hpp>

#include "objstore/object_store.h"

namespace warmfs {

TEST_CASE("part plan: parts are contiguous, full but the last, and 10,000 of them hold 5 TiB",
          "[upload]") {
  PartPlan plan;
  CHECK(plan.part_offset(1) == 0);
  CHECK(plan.part_size(1) == 8ull << 20);
  CHECK(plan.part_size(1000) == 8ull << 20);
  CHECK(plan.part_size(1001) == 16ull << 20);
  for (int n = 1; n < kMaxPartNumber; ++n) {
    REQUIRE(plan.part_end(n) == plan.part_offset(n + 1));
    REQUIRE(plan.part_size(n) >= kMinPartSize);
    REQUIRE(plan.part_size(n) <= kMaxPartSize);
  }
  CHECK(plan.max_object_size() >= 5ull << 40);
  CHECK(plan.part_at(0) == 1);
  CHECK(plan.part_at((8ull << 20) - 1) == 1);
  CHECK(plan.part_at(8ull << 20) == 2);
  for (int n : {1, 2, 999, 1000, 1001, 2500, 9999, 10000}) {
    CHECK(plan.part_at(plan.part_offset(n)) == n);
    CHECK(plan.part_at(plan.part_end(n) - 1) == n);
  }
  CHECK(plan.part_at(plan.max_object_size()) == 10001);
  CHECK(plan.parts_for(0) == 1);
  CHECK(plan.parts_for(1) == 1);
  CHECK(plan.parts_for(8ull << 20) == 1);
  CHECK(plan.parts_for((8ull << 20) + 1) == 2);
  CHECK(plan.parts_for(5ull << 40) <= kMaxPartNumber);
  CHECK(PartPlan::valid_base(5ull << 20));
  CHECK_FALSE(PartPlan::valid_base(4ull << 20));
  CHECK_FALSE(PartPlan::valid_base(11ull << 20));
}

}  // namespace warmfs
