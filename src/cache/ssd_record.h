// The on-disk record of one chunk in a region file: the chunk's bytes, then a fixed 32-byte
// trailer that lets a reader tell a record of this key and generation from anything else
// (stale data of an earlier fill, a torn write, foreign bytes). Private to the SSD cache.
//
// Trailer, little-endian: magic u32 "WFC1", length u32, CRC32C of the bytes u32, CRC32C of the
// encoded key u32, region generation u64, CRC32C of the preceding 24 trailer bytes u32, zero
// u32 (padding: written, not checked). Pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace warmfs::ssd_record {

inline constexpr size_t kTrailerBytes = 32;
using Trailer = std::array<std::byte, kTrailerBytes>;

struct Fields {
  uint32_t length = 0;
  uint32_t data_crc = 0;
  uint32_t key_crc = 0;
  uint64_t gen = 0;
};

Trailer encode(const Fields& f);
// True when t is a well-formed trailer equal to expected.
bool matches(std::span<const std::byte> t, const Fields& expected);
uint32_t key_crc(std::string_view encoded_key);
// True when the record of a chunk of `length` bytes at `offset` (bytes and trailer) lies
// wholly within a region file of file_size bytes and a region of region_bytes: what recovery
// asks of an index entry before it trusts it.
bool fits(uint64_t offset, uint32_t length, uint64_t file_size, uint64_t region_bytes);
// True when `read`, the bytes read back from a record's offset (the record, perhaps more),
// holds an intact record of expected: long enough, its trailer matches and its first
// expected.length bytes have CRC32C expected.data_crc. Anything else is a corrupt record.
bool intact(std::span<const std::byte> read, const Fields& expected);

}  // namespace warmfs::ssd_record
