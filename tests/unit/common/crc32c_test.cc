#include "common/crc32c.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

using warmfs::crc32c;
using warmfs::crc32c_portable;

namespace {
std::span<const std::byte> as_span(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}
}  // namespace

TEST_CASE("crc32c matches the standard check values", "[common]") {
  CHECK(crc32c(std::string_view("123456789")) == 0xE3069283u);
  CHECK(crc32c(std::string_view("")) == 0u);
  CHECK(crc32c(std::string_view("a")) == 0xC1D04330u);
  // RFC 3720 (iSCSI) B.4: 32 bytes of zeros, of 0xFF, ascending, descending.
  CHECK(crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  CHECK(crc32c(std::string(32, '\xff')) == 0x62A8AB43u);
  std::string up, down;
  for (int i = 0; i < 32; ++i) {
    up.push_back(char(i));
    down.push_back(char(31 - i));
  }
  CHECK(crc32c(up) == 0x46DD794Eu);
  CHECK(crc32c(down) == 0x113FDB5Cu);
  CHECK(crc32c_portable(as_span("123456789")) == 0xE3069283u);
}

TEST_CASE("crc32c hardware and table paths agree at every length and alignment", "[common]") {
  std::mt19937_64 rng(42);
  std::string buf(3 * 8192 * 2 + 3 * 256 + 64, '\0');
  for (char& c : buf) c = char(rng());
  for (size_t start = 0; start < 9; ++start) {
    for (size_t len : {0,
                       1,
                       7,
                       8,
                       9,
                       15,
                       16,
                       63,
                       64,
                       65,
                       767,
                       768,
                       769,
                       1000,
                       4096,
                       24575,
                       24576,
                       24577,
                       3 * 8192 + 3 * 256 + 17,
                       2 * 3 * 8192 + 5}) {
      auto s = as_span(buf).subspan(start, len);
      INFO("start " << start << " len " << len);
      CHECK(crc32c(s) == crc32c_portable(s));
    }
  }
}

TEST_CASE("crc32c extends across pieces", "[common]") {
  const std::string a = "hello, ", b = "world";
  CHECK(crc32c(b, crc32c(a)) == crc32c(a + b));
  CHECK(crc32c_portable(as_span(b), crc32c_portable(as_span(a))) == crc32c(a + b));
}
