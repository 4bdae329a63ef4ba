// SsdIndex: the SSD cache's persistent index, a RocksDB database (the only code that
// includes RocksDB headers).
//
// Records, by key prefix:
//   'c' + ChunkKey::encode()                   -> SsdIndexEntry (where the chunk's record is)
//   'g' + region(be32) + gen(be64) + off(be64) -> the chunk key (lets a region be emptied
//                                                 without an in-memory list of its keys)
//   'r' + region(be32)                          -> the region's current fill generation
//   'm' + name                                  -> small metadata (the layout's format)
// A chunk's 'c' and 'g' records are written and deleted together in one WriteBatch. Writes
// use RocksDB's defaults: the WAL is written on every batch but not fsynced, so a crash of
// the process loses nothing and a power loss may lose the newest entries (just misses).
//
// Not an arbiter of consistency: entries may point at data that was lost or overwritten;
// SsdCache checks generations, file sizes and CRCs and drops what does not hold up.
//
// Thread safe (RocksDB is); a caller that needs read-compare-delete atomicity across calls
// serializes its mutations itself.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "warmfs/result.h"

namespace warmfs {

struct SsdIndexEntry {
  uint32_t region = 0;
  uint64_t gen = 0;           // the region's fill generation when the chunk was written
  uint64_t offset = 0;        // of the record in the region file
  uint32_t length = 0;        // chunk bytes (the record adds a trailer)
  uint32_t crc32c = 0;        // of the chunk bytes
  int64_t last_read_sec = 0;  // wall clock, seconds: written or last refreshed by a read
  // The chunk's checksum blocks (block_cache.h): bytes per block, and the CRC32C of each,
  // ceil(length / block_bytes) of them. 0 and empty for an entry without them (format 1, or
  // a chunk put without them): such a record is only ever read whole.
  uint32_t block_bytes = 0;
  std::vector<uint32_t> block_crcs;

  bool same_place(const SsdIndexEntry& o) const {
    return region == o.region && gen == o.gen && offset == o.offset;
  }
};

// An entry's value in the index (a version byte, then the fields big-endian), and back:
// nullopt for any value that is not exactly one well-formed entry (a crash or foreign bytes
// may leave anything there). Version 1: region, gen, offset, length, crc32c, last_read_sec
// (37 bytes). Version 2, for an entry with block CRCs: the same, then block_bytes (u32, not
// 0) and the block CRCs (u32 each, exactly as many as length needs). An entry without block
// CRCs is written as version 1, and both decode. Pure functions.
std::string encode_index_entry(const SsdIndexEntry& e);
std::optional<SsdIndexEntry> decode_index_entry(std::string_view value);

class SsdIndex {
 public:
  // Opens (creating if missing) the database in dir.
  static Result<std::unique_ptr<SsdIndex>> open(const std::string& dir);
  ~SsdIndex();
  SsdIndex(const SsdIndex&) = delete;
  SsdIndex& operator=(const SsdIndex&) = delete;

  // The entry of an encoded chunk key, or nullopt.
  Result<std::optional<SsdIndexEntry>> get(std::string_view key) const;
  // Stores key -> entry (replacing any entry of key, and its back reference).
  Status put(std::string_view key, const SsdIndexEntry& entry);
  // Deletes key's entry if it is still at expected's place; true if it was deleted.
  Result<bool> erase_if(std::string_view key, const SsdIndexEntry& expected);
  // Deletes every chunk of region written under gen; returns how many.
  Result<uint64_t> erase_region(uint32_t region, uint64_t gen);
  // Deletes every chunk, region and metadata record.
  Status clear();

  Status put_region_gen(uint32_t region, uint64_t gen);
  // region -> current generation, for every region ever filled.
  Result<std::map<uint32_t, uint64_t>> region_gens() const;

  Result<std::optional<std::string>> get_meta(std::string_view name) const;
  Status put_meta(std::string_view name, std::string_view value);

  // Calls visit for every chunk entry, in key order. Entries for which visit returns false
  // are deleted (with their back references) once the scan is done. Returns how many.
  Result<uint64_t> scan(
      const std::function<bool(std::string_view key, const SsdIndexEntry&)>& visit);

  struct Impl;  // RocksDB handles, defined in ssd_index.cc

 private:
  explicit SsdIndex(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace warmfs
