#include "cache/kv_db.h"

#include <catch2/catch.hpp>
#include <fstream>

#include "support/temp_dir.h"

using namespace warmfs;
using namespace warmfs::testing;

TEST_CASE("kv db puts, gets, scans and erases by prefix, and survives reopening", "[kvdb]") {
  TempDir tmp;
  const std::string dir = tmp.path + "/listings";
  {
    auto db = KvDb::open(dir);
    REQUIRE(db.is_ok());
    auto missing = (*db)->get("a");
    REQUIRE(missing.is_ok());
    CHECK_FALSE(missing->has_value());
    for (const char* k : {"a", "a/b", "a/c", "ab", "b"}) REQUIRE((*db)->put(k, k).is_ok());
    REQUIRE((*db)->put(std::string("z\0y", 3), std::string("\0\1", 2)).is_ok());
  }
  auto db = KvDb::open(dir);
  REQUIRE(db.is_ok());
  auto v = (*db)->get(std::string("z\0y", 3));
  REQUIRE(v.is_ok());
  CHECK(**v == std::string("\0\1", 2));
  std::vector<std::string> seen;
  REQUIRE((*db)
              ->scan("a",
                     [&](std::string_view k, std::string_view val) {
                       CHECK(k == val);
                       seen.emplace_back(k);
                       return true;
                     })
              .is_ok());
  CHECK(seen == std::vector<std::string>{"a", "a/b", "a/c", "ab"});
  REQUIRE((*db)->erase_prefix("a/").is_ok());
  REQUIRE((*db)->erase("b").is_ok());
  seen.clear();
  REQUIRE((*db)
              ->scan("",
                     [&](std::string_view k, std::string_view) {
                       seen.emplace_back(k);
                       return seen.size() < 2;  // stops when asked
                     })
              .is_ok());
  CHECK(seen == std::vector<std::string>{"a", "ab"});
}

TEST_CASE("kv db open fails with a message when the directory cannot be made", "[kvdb]") {
  TempDir tmp;
  const std::string file = (tmp / "plain").string();
  std::ofstream(file) << "x";
  auto db = KvDb::open(file + "/listings");
  REQUIRE_FALSE(db.is_ok());
  CHECK_FALSE(db.status().message().empty());
}
