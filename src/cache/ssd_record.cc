#include "cache/ssd_record.h"

#include <algorithm>

#include "common/crc32c.h"

namespace warmfs::ssd_record {
namespace {

constexpr uint32_t kMagic = 0x31434657;  // "WFC1" little-endian

void put_le(std::byte* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = std::byte(static_cast<uint8_t>(v >> (8 * i)));
}
uint64_t get_le(const std::byte* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace

Trailer encode(const Fields& f) {
  Trailer t{};
  put_le(t.data(), kMagic, 4);
  put_le(t.data() + 4, f.length, 4);
  put_le(t.data() + 8, f.data_crc, 4);
  put_le(t.data() + 12, f.key_crc, 4);
  put_le(t.data() + 16, f.gen, 8);
  put_le(t.data() + 24, crc32c(std::span<const std::byte>(t.data(), 24)), 4);
  return t;
}

bool matches(std::span<const std::byte> t, const Fields& expected) {
  if (t.size() != kTrailerBytes) return false;
  if (get_le(t.data(), 4) != kMagic) return false;
  if (get_le(t.data() + 24, 4) != crc32c(t.first(24))) return false;
  return get_le(t.data() + 4, 4) == expected.length &&
         get_le(t.data() + 8, 4) == expected.data_crc &&
         get_le(t.data() + 12, 4) == expected.key_crc && get_le(t.data() + 16, 8) == expected.gen;
}

uint32_t key_crc(std::string_view encoded_key) { return crc32c(encoded_key); }

bool fits(uint64_t offset, uint32_t length, uint64_t file_size, uint64_t region_bytes) {
  // Without offset + record, which a damaged entry's offset near 2^64 wraps to a small end.
  const uint64_t limit = std::min(file_size, region_bytes);
  const uint64_t record = uint64_t{length} + kTrailerBytes;
  return record <= limit && offset <= limit - record;
}

bool intact(std::span<const std::byte> read, const Fields& expected) {
  const size_t record = size_t{expected.length} + kTrailerBytes;
  return read.size() >= record && matches(read.subspan(expected.length, kTrailerBytes), expected) &&
         crc32c(read.first(expected.length)) == expected.data_crc;
}

}  // namespace warmfs::ssd_record
