#include "common/sizes.h"

#include <catch2/catch.hpp>
#include <string>

using warmfs::parse_duration_seconds;
using warmfs::parse_size;

TEST_CASE("parse_size reads binary units", "[common]") {
  CHECK(parse_size("0") == 0u);
  CHECK(parse_size("4096") == 4096u);
  CHECK(parse_size("512M") == 512ull << 20);
  CHECK(parse_size("4G") == 4ull << 30);
  CHECK(parse_size("4GiB") == 4ull << 30);
  CHECK(parse_size("1.5T") == (3ull << 40) / 2);
  CHECK(parse_size("64k") == 64ull << 10);
}

TEST_CASE("parse_size rejects malformed text", "[common]") {
  CHECK_FALSE(parse_size(""));
  CHECK_FALSE(parse_size("M"));
  CHECK_FALSE(parse_size("-1G"));
  CHECK_FALSE(parse_size("1.2.3G"));
  CHECK_FALSE(parse_size("12X"));
  CHECK_FALSE(parse_size("99999999999T"));
}

TEST_CASE("parse_duration_seconds", "[common]") {
  CHECK(parse_duration_seconds("30") == 30.0);
  CHECK(parse_duration_seconds("2m") == 120.0);
  CHECK(parse_duration_seconds("1h") == 3600.0);
  CHECK_FALSE(parse_duration_seconds("1w"));
  CHECK_FALSE(parse_duration_seconds("abc"));
}

TEST_CASE("parse_duration_seconds refuses durations its callers cannot hold", "[common]") {
  // Found by tests/fuzz/sizes_fuzz: 300 digits and "d" parsed as infinity, and anything past
  // about 292 years overflowed the int64 milliseconds and nanoseconds callers convert it to.
  CHECK_FALSE(parse_duration_seconds(std::string(300, '9') + "d"));
  CHECK_FALSE(parse_duration_seconds(std::string(400, '9')));
  CHECK_FALSE(parse_duration_seconds("99999999999999999"));
  CHECK_FALSE(parse_duration_seconds("36501d"));
  CHECK(parse_duration_seconds("36500d") == 36500.0 * 86400);
  CHECK(parse_duration_seconds("0.5s") == 0.5);
}
