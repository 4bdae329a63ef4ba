#include "cache/ssd_index.h"

#include <catch2/catch.hpp>

#include "unit/cache/ssd_test_util.h"

using namespace warmfs;
using namespace warmfs::testing;

TEST_CASE("ssd index puts, gets, deletes and survives reopening", "[ssd]") {
  TempDir tmp;
  const std::string dir = tmp.path + "/index";
  const std::string k1 = key_of(1).encode();
  const std::string k2 = key_of(2).encode();
  const SsdIndexEntry e1{.region = 3,
                         .gen = 7,
                         .offset = 4096,
                         .length = 1000,
                         .crc32c = 0xabcd,
                         .last_read_sec = 1700000000};
  const SsdIndexEntry e2{.region = 3, .gen = 7, .offset = 8192, .length = 10, .crc32c = 1};
  {
    auto idx = SsdIndex::open(dir);
    REQUIRE(idx.is_ok());
    auto missing = (*idx)->get(k1);
    REQUIRE(missing.is_ok());
    CHECK_FALSE(missing->has_value());
    REQUIRE((*idx)->put(k1, e1).is_ok());
    REQUIRE((*idx)->put(k2, e2).is_ok());
    REQUIRE((*idx)->put_region_gen(3, 7).is_ok());
    REQUIRE((*idx)->put_meta("format", "x").is_ok());
    auto got = (*idx)->get(k1);
    REQUIRE(got.is_ok());
    REQUIRE(got->has_value());
    CHECK((*got)->offset == 4096);
    CHECK((*got)->crc32c == 0xabcd);
    CHECK((*got)->last_read_sec == 1700000000);
    // erase_if only deletes an entry still at the expected place.
    SsdIndexEntry elsewhere = e2;
    elsewhere.offset = 1;
    CHECK_FALSE(*(*idx)->erase_if(k2, elsewhere));
    CHECK(*(*idx)->erase_if(k2, e2));
    CHECK_FALSE((*(*idx)->get(k2)).has_value());
  }
  auto idx = SsdIndex::open(dir);
  REQUIRE(idx.is_ok());
  auto got = (*idx)->get(k1);
  REQUIRE(got.is_ok());
  REQUIRE(got->has_value());
  CHECK((*got)->length == 1000);
  CHECK(**(*idx)->get_meta("format") == "x");
  CHECK((*(*idx)->region_gens()).at(3) == 7);
}

TEST_CASE("ssd index empties a region generation and scans with drops", "[ssd]") {
  TempDir tmp;
  auto idx = SsdIndex::open(tmp.path + "/index");
  REQUIRE(idx.is_ok());
  SsdIndex& x = **idx;
  for (uint64_t i = 0; i < 10; ++i) {
    const SsdIndexEntry e{
        .region = uint32_t(i % 2), .gen = 5 + i % 2, .offset = i * 100, .length = 100};
    REQUIRE(x.put(key_of(i).encode(), e).is_ok());
  }
  // Re-putting a key elsewhere moves it: emptying its old region leaves it alone.
  REQUIRE(
      x.put(key_of(0).encode(), {.region = 1, .gen = 6, .offset = 5000, .length = 100}).is_ok());
  auto n = x.erase_region(0, 5);
  REQUIRE(n.is_ok());
  CHECK(*n == 4);  // keys 2, 4, 6, 8
  CHECK((*x.get(key_of(0).encode())).has_value());
  CHECK_FALSE((*x.get(key_of(2).encode())).has_value());
  // Region 1 keeps 6 entries; a scan that refuses odd offsets drops some of them.
  uint64_t seen = 0;
  auto dropped = x.scan([&](std::string_view, const SsdIndexEntry& e) {
    ++seen;
    return e.offset != 100 && e.offset != 300;
  });
  REQUIRE(dropped.is_ok());
  CHECK(seen == 6);
  CHECK(*dropped == 2);
  CHECK_FALSE((*x.get(key_of(1).encode())).has_value());
  CHECK((*x.get(key_of(5).encode())).has_value());
  REQUIRE(x.clear().is_ok());
  CHECK_FALSE((*x.get(key_of(5).encode())).has_value());
}
