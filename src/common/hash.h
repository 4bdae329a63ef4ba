// Small hashing helpers shared by the caches.
#pragma once

#include <cstdint>

namespace warmfs {

// The 64-bit finalizer of MurmurHash3: spreads every input bit over the output, so both the
// low bits (shard choice) and the high bits (table buckets, sketch rows) are well mixed.
inline uint64_t mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

}  // namespace warmfs
