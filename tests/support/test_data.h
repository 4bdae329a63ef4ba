// Deterministic test data: reproducible pseudo-random bytes from a seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace warmfs {

inline std::vector<std::byte> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> out(n);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t w = rng();
    for (int b = 0; b < 8; ++b) out[i + b] = std::byte(uint8_t(w >> (8 * b)));
  }
  const uint64_t w = rng();
  for (; i < n; ++i) out[i] = std::byte(uint8_t(w >> (8 * (i % 8))));
  return out;
}

}  // namespace warmfs
