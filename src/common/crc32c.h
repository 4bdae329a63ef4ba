// CRC32C (Castagnoli), the checksum every cached chunk carries.
//
// Uses the SSE4.2 crc32 instruction when the CPU has it (checked once, at first use) and a
// table otherwise; both give the same values. The standard form: initial value and final
// xor are 0xFFFFFFFF, so crc32c("123456789") == 0xE3069283. Pure functions, thread safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace warmfs {

// CRC32C of data. To checksum in pieces, pass the previous result as crc:
// crc32c(b, crc32c(a)) == crc32c(a + b).
uint32_t crc32c(std::span<const std::byte> data, uint32_t crc = 0);
uint32_t crc32c(std::string_view data, uint32_t crc = 0);

// crc32c(a + b) from crc32c(a), crc32c(b) and b's length, without the bytes: a piece's CRC
// shifted over len_b zero bytes (a multiplication by x^(8 * len_b) modulo the polynomial), xor
// the next piece's. About 1 us; Crc32cCombiner does it in a fraction of that for many pieces
// of one length.
uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

// crc32c_combine for pieces b of one length, with the shift over it computed once.
class Crc32cCombiner {
 public:
  explicit Crc32cCombiner(uint64_t len_b);
  uint32_t operator()(uint32_t crc_a, uint32_t crc_b) const;

 private:
  uint32_t shift_;  // x^(8 * len_b) modulo the polynomial
};

// The table implementation, always available; exposed so tests can compare both paths.
uint32_t crc32c_portable(std::span<const std::byte> data, uint32_t crc = 0);
// True when crc32c() uses the SSE4.2 instruction on this machine.
bool crc32c_is_hardware();

}  // namespace warmfs
