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

}  // namespace warmfs
