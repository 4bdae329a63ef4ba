// PartPlan: where the parts of a multipart upload begin and end, for an object of any size.
//
// Part boundaries depend only on the part number, never on the object's final size, so parts
// can be uploaded while the file is still being written. Parts 1..1000 are base_size bytes,
// and the size doubles every 1000 parts: with the default 8 MiB base, the first 8 GiB go in
// 8 MiB parts and 10,000 parts hold 7.8 TiB, past S3's 5 TiB object limit, with the largest
// part (4 GiB) under S3's 5 GiB part limit. Every part but the last is full, so every part but
// the last is at least 5 MiB, as S3 requires.
#pragma once

#include <cstdint>

namespace warmfs {

class PartPlan {
 public:
  static constexpr uint64_t kDefaultBaseSize = 8ull << 20;
  static constexpr int kPartsPerStep = 1000;

  // base_size: at least 5 MiB (S3's smallest part) and at most 10 MiB (so part 10,000 stays
  // under 5 GiB); callers check with valid().
  explicit PartPlan(uint64_t base_size = kDefaultBaseSize) : base_(base_size) {}
  static bool valid_base(uint64_t base_size);

  uint64_t base_size() const { return base_; }
  // Size of part n (1..10000) when it is full.
  uint64_t part_size(int n) const;
  // Offset of the first byte of part n.
  uint64_t part_offset(int n) const;
  // One past the last byte of part n when full.
  uint64_t part_end(int n) const { return part_offset(n) + part_size(n); }
  // The part holding byte `offset` (1-based); past the largest object, 10001.
  int part_at(uint64_t offset) const;
  // Parts an object of `size` bytes is cut into (at least 1: an empty object is one part).
  int parts_for(uint64_t size) const;
  // The largest object 10,000 parts hold.
  uint64_t max_object_size() const { return part_end(10000); }

 private:
  uint64_t base_;
};

}  // namespace warmfs
