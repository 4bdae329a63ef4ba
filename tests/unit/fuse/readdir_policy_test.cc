#include "fuse/readdir_policy.h"

#include <catch2/catch.hpp>

using warmfs::ReaddirPolicy;

TEST_CASE("a walk that opens only directories gets names only", "[readdir]") {
  ReaddirPolicy p;
  // find: lists a directory, descends into its subdirectories, lists them.
  for (uint64_t dir = 10; dir < 20; ++dir) {
    CHECK_FALSE(p.attributes_for(7, dir));
    p.looked_up(7, dir, /*is_dir=*/true);
    p.looked_up(7, dir, /*is_dir=*/true);
  }
  CHECK_FALSE(p.attributes_for(7, 20));
  CHECK(p.learned() == 0);
}

TEST_CASE("a caller that looks up files it listed gets attributes from then on", "[readdir]") {
  ReaddirPolicy p;
  // ls -lR: lists a directory, then stats each entry of it.
  CHECK_FALSE(p.attributes_for(7, 10));
  p.looked_up(7, 10, false);
  CHECK_FALSE(p.attributes_for(7, 10));  // one file: not yet
  p.looked_up(7, 10, false);
  CHECK(p.attributes_for(7, 11));
  CHECK(p.attributes_for(7, 10));
  CHECK(p.learned() == 1);
  // Another thread has not shown it.
  CHECK_FALSE(p.attributes_for(8, 11));
}

TEST_CASE("lookups count only in the directory last listed with names only", "[readdir]") {
  ReaddirPolicy p;
  CHECK_FALSE(p.attributes_for(7, 10));
  p.looked_up(7, 99, false);  // a path the caller had already (open by name)
  p.looked_up(7, 98, false);
  CHECK_FALSE(p.attributes_for(7, 11));
  p.looked_up(7, 10, false);  // a file of the directory listed before the last
  p.looked_up(8, 11, false);  // another thread's
  CHECK_FALSE(p.attributes_for(7, 11));
  p.looked_up(7, 11, false);
  p.looked_up(7, 11, false);
  CHECK(p.attributes_for(7, 12));
}

TEST_CASE("listing the same directory again keeps its count", "[readdir]") {
  ReaddirPolicy p;
  CHECK_FALSE(p.attributes_for(7, 10));
  p.looked_up(7, 10, false);
  CHECK_FALSE(p.attributes_for(7, 10));  // the directory's next page
  p.looked_up(7, 10, false);
  CHECK(p.attributes_for(7, 10));
}

TEST_CASE("always: every reply carries attributes", "[readdir]") {
  ReaddirPolicy p(/*always_attributes=*/true);
  CHECK(p.attributes_for(7, 10));
  CHECK(p.attributes_for(8, 11));
}

TEST_CASE("the record of callers is bounded", "[readdir]") {
  ReaddirPolicy p;
  CHECK_FALSE(p.attributes_for(1, 10));
  p.looked_up(1, 10, false);
  p.looked_up(1, 10, false);
  CHECK(p.attributes_for(1, 10));
  for (uint32_t tid = 2; tid < ReaddirPolicy::kMaxCallers + 10; ++tid) p.attributes_for(tid, 10);
  // Past the bound the record started again: the first caller learns anew.
  CHECK_FALSE(p.attributes_for(1, 10));
}
