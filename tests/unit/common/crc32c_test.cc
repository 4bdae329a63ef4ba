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

TEST_CASE("crc32c_combine gives the CRC of the joined bytes", "[common][crc32c_combine]") {
  std::mt19937_64 rng(7);
  std::vector<std::byte> data(3 << 20);
  for (auto& b : data) b = std::byte(rng() & 0xff);
  const std::span<const std::byte> all(data);
  // Splits at every kind of place: empty pieces, odd lengths, powers of two, megabytes.
  const std::vector<size_t> lengths = {0,    1,     3,     7,     8,       9,      255,
                                       4096, 16383, 16384, 16385, 1 << 20, 3 << 20};
  for (size_t total : lengths) {
    for (size_t cut : {size_t{0}, size_t{1}, total / 3, total / 2, total}) {
      if (cut > total) continue;
      INFO("total " << total << " cut " << cut);
      const auto a = all.first(cut);
      const auto b = all.subspan(cut, total - cut);
      CHECK(warmfs::crc32c_combine(crc32c(a), crc32c(b), b.size()) == crc32c(all.first(total)));
    }
  }
  // Lengths past 4 GiB: shifting over n then m bytes is shifting over n + m (CRC values of
  // pieces too long to checksum here stand for themselves).
  const uint64_t n = (uint64_t{5} << 32) + 12345, m = (uint64_t{3} << 40) + 7;
  const uint32_t a = 0x12345678, b = 0x9abcdef0, c = 0x0f1e2d3c;
  CHECK(warmfs::crc32c_combine(warmfs::crc32c_combine(a, b, n), c, m) ==
        warmfs::crc32c_combine(a, warmfs::crc32c_combine(b, c, m), n + m));
}

TEST_CASE("Crc32cCombiner folds equal pieces into the whole CRC", "[common][crc32c_combine]") {
  std::mt19937_64 rng(11);
  for (size_t piece : {size_t{1}, size_t{512}, size_t{16384}}) {
    std::vector<std::byte> data(piece * 64 + 100);
    for (auto& b : data) b = std::byte(rng() & 0xff);
    const std::span<const std::byte> all(data);
    const warmfs::Crc32cCombiner combine(piece);
    uint32_t crc = crc32c(all.first(piece));
    size_t at = piece;
    for (; at + piece <= data.size(); at += piece)
      crc = combine(crc, crc32c(all.subspan(at, piece)));
    // The short tail through the general form.
    const auto tail = all.subspan(at);
    crc = warmfs::crc32c_combine(crc, crc32c(tail), tail.size());
    INFO("piece " << piece);
    CHECK(crc == crc32c(all));
  }
}
