#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace warmfs {
namespace {

constexpr uint32_t kPolyReflected = 0x82F63B78;

// tables[k][b]: CRC of byte b followed by k zero bytes, for slicing by 8.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1) ? kPolyReflected : 0);
    t[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    for (size_t k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  }
  return t;
}

constexpr Tables kTables = make_tables();

// Works on the raw (already inverted) register.
uint32_t update_portable(uint32_t c, const unsigned char* p, size_t n) {
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);  // little endian: x86, arm64
    w ^= c;
    c = kTables[7][w & 0xFF] ^ kTables[6][(w >> 8) & 0xFF] ^ kTables[5][(w >> 16) & 0xFF] ^
        kTables[4][(w >> 24) & 0xFF] ^ kTables[3][(w >> 32) & 0xFF] ^ kTables[2][(w >> 40) & 0xFF] ^
        kTables[1][(w >> 48) & 0xFF] ^ kTables[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
  return c;
}

#if defined(__x86_64__)
// The crc32 instruction takes 3 cycles and can start every cycle, so three independent
// streams run at three times the speed of one. The streams' CRCs are then combined: the CRC
// of A followed by B is the CRC of A shifted over len(B) zero bytes, xor the CRC of B; a
// shift over a fixed length is linear in the register, so four 256-entry tables do it.
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 256;

using ShiftTable = std::array<std::array<uint32_t, 256>, 4>;

__attribute__((target("sse4.2"))) uint32_t shift_slow(uint32_t c, size_t zero_bytes) {
  uint64_t c64 = c;
  for (size_t i = 0; i < zero_bytes; i += 8) c64 = _mm_crc32_u64(c64, 0);
  return static_cast<uint32_t>(c64);
}

ShiftTable make_shift_table(size_t zero_bytes) {
  ShiftTable t{};
  for (size_t k = 0; k < 4; ++k) {
    for (uint32_t v = 0; v < 256; ++v) t[k][v] = shift_slow(v << (8 * k), zero_bytes);
  }
  return t;
}

uint32_t shift(const ShiftTable& t, uint32_t c) {
  return t[0][c & 0xFF] ^ t[1][(c >> 8) & 0xFF] ^ t[2][(c >> 16) & 0xFF] ^ t[3][c >> 24];
}

// Runs three streams of `block` bytes at p, p + block, p + 2 * block, and combines them.
__attribute__((target("sse4.2"))) uint64_t three_way(uint64_t c0, const unsigned char* p,
                                                     size_t block, const ShiftTable& t) {
  uint64_t c1 = 0, c2 = 0;
  for (size_t i = 0; i < block; i += 8) {
    uint64_t w0, w1, w2;
    std::memcpy(&w0, p + i, 8);
    std::memcpy(&w1, p + block + i, 8);
    std::memcpy(&w2, p + 2 * block + i, 8);
    c0 = _mm_crc32_u64(c0, w0);
    c1 = _mm_crc32_u64(c1, w1);
    c2 = _mm_crc32_u64(c2, w2);
  }
  uint32_t c = shift(t, static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1);
  return shift(t, c) ^ static_cast<uint32_t>(c2);
}

__attribute__((target("sse4.2"))) uint32_t update_sse42(uint32_t c, const unsigned char* p,
                                                        size_t n) {
  static const ShiftTable long_shift = make_shift_table(kLongBlock);
  static const ShiftTable short_shift = make_shift_table(kShortBlock);
  uint64_t c64 = c;
  for (; n >= 3 * kLongBlock; p += 3 * kLongBlock, n -= 3 * kLongBlock) {
    c64 = three_way(c64, p, kLongBlock, long_shift);
  }
  for (; n >= 3 * kShortBlock; p += 3 * kShortBlock, n -= 3 * kShortBlock) {
    c64 = three_way(c64, p, kShortBlock, short_shift);
  }
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c64 = _mm_crc32_u64(c64, w);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c64);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

bool detect_sse42() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}
#else
bool detect_sse42() { return false; }
#endif

// Arithmetic on polynomials modulo the CRC's, in its reflected bit order (x^0 is the top
// bit), as zlib's crc32_combine does it.
// a * b modulo the polynomial.
uint32_t mult_mod_p(uint32_t a, uint32_t b) {
  uint32_t m = 1u << 31;
  uint32_t p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = (b & 1) ? (b >> 1) ^ kPolyReflected : b >> 1;
  }
  return p;
}

// x^(2^k) modulo the polynomial, for every k a 64-bit byte count needs (8 * n < 2^67).
using PowerTable = std::array<uint32_t, 67>;
constexpr PowerTable make_power_table() {
  PowerTable t{};
  uint32_t p = 1u << 30;  // x^1
  t[0] = p;
  for (size_t k = 1; k < t.size(); ++k) {
    // p = p * p modulo the polynomial, as mult_mod_p (constexpr copy).
    uint32_t a = p, b = p, m = 1u << 31, r = 0;
    for (;;) {
      if (a & m) {
        r ^= b;
        if ((a & (m - 1)) == 0) break;
      }
      m >>= 1;
      b = (b & 1) ? (b >> 1) ^ kPolyReflected : b >> 1;
    }
    p = r;
    t[k] = p;
  }
  return t;
}
constexpr PowerTable kPowers = make_power_table();

// x^(8 * n) modulo the polynomial: the shift over n zero bytes.
uint32_t shift_bytes(uint64_t n) {
  uint32_t p = 1u << 31;  // x^0
  unsigned k = 3;         // 8 * n = n * 2^3
  for (; n != 0; n >>= 1, ++k) {
    if (n & 1) p = mult_mod_p(kPowers[k], p);
  }
  return p;
}

bool use_hardware() {
  static const bool hw = detect_sse42();
  return hw;
}

}  // namespace

uint32_t crc32c_portable(std::span<const std::byte> data, uint32_t crc) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  return ~update_portable(~crc, p, data.size());
}

uint32_t crc32c(std::span<const std::byte> data, uint32_t crc) {
#if defined(__x86_64__)
  if (use_hardware()) {
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    return ~update_sse42(~crc, p, data.size());
  }
#endif
  return crc32c_portable(data, crc);
}

uint32_t crc32c(std::string_view data, uint32_t crc) {
  return crc32c(std::as_bytes(std::span(data.data(), data.size())), crc);
}

bool crc32c_is_hardware() { return use_hardware(); }

uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  return mult_mod_p(shift_bytes(len_b), crc_a) ^ crc_b;
}

Crc32cCombiner::Crc32cCombiner(uint64_t len_b) : shift_(shift_bytes(len_b)) {}

uint32_t Crc32cCombiner::operator()(uint32_t crc_a, uint32_t crc_b) const {
  return mult_mod_p(shift_, crc_a) ^ crc_b;
}

}  // namespace warmfs
