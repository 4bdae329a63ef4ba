// Manifest: a snapshot of a bucket prefix's namespace, every key below it with its size, ETag,
// modification time and (when taken with versions) version id, frozen at one moment.
//
// In memory it is three flat arrays, with no heap node per entry: the keys (relative to the
// prefix) back to back in one string, a 32-byte record per entry (offset and length of the
// key, offset of the ETag, size, mtime), and the ETags in one string (an MD5 ETag packed to
// its 16 bytes). Entries are sorted by key (bytewise) and unique, so a key or the first key
// at or after a prefix is found by binary search, and a directory's listing is a range.
//
// On disk (docs/snapshots.md, "Format"): a fixed header, then blocks of up to 65,536
// entries, each a zstd frame with its checksum; within a block each key shares a prefix with
// the one before. encode() and decode() are exact inverses.
//
// Not thread safe to build; a built Manifest is immutable and may be read from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "objstore/object_store.h"
#include "warmfs/result.h"

namespace warmfs {

// The newest format this warmfs reads and writes: 2 for a manifest whose entries name where
// their bytes are (a snapshot of a branch), else 1, which older warmfs read too.
inline constexpr uint32_t kManifestFormatVersion = 2;

struct ManifestEntryView {
  std::string_view key;  // relative to the manifest's prefix
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  std::string etag;
  std::string version_id;     // empty unless taken with versions
  std::string_view location;  // where the bytes are, relative to the prefix; empty: at key
};

class Manifest {
 public:
  Manifest() = default;

  const std::string& bucket() const { return bucket_; }
  // "" or "a/b/" (ends in '/'): entries' keys are relative to it.
  const std::string& prefix() const { return prefix_; }
  bool has_versions() const { return has_versions_; }
  int64_t created_sec() const { return created_sec_; }
  size_t size() const { return entries_.size(); }

  std::string_view key(size_t i) const {
    return std::string_view(names_).substr(entries_[i].name_off, entries_[i].name_len);
  }
  uint64_t object_size(size_t i) const { return entries_[i].size; }
  int64_t mtime_sec(size_t i) const { return entries_[i].mtime_sec; }
  std::string etag(size_t i) const;
  // The ETag in its packed encoding (the same in memory and in a file's blocks).
  std::string_view encoded_etag(size_t i) const;
  std::string version_id(size_t i) const;
  // Where entry i's bytes are, relative to the prefix: another key than its own (a snapshot
  // of a branch names the branch's objects), or empty for the key itself.
  std::string_view location(size_t i) const;
  bool has_locations() const { return has_locations_; }
  ManifestEntryView entry(size_t i) const;

  // Index of the first entry whose key is >= key (size() if none).
  size_t lower_bound(std::string_view key) const;
  // Index of the entry with exactly this key.
  std::optional<size_t> find(std::string_view key) const;

  // Bytes of the packed ETags (the encoder's hint to the decoder).
  size_t etag_bytes() const { return etags_.size(); }
  // Bytes held by the arrays (not counting the object itself).
  size_t memory_bytes() const;

 private:
  friend class ManifestBuilder;
  friend Result<Manifest> decode_manifest(std::string_view bytes);
  struct Entry {
    uint64_t name_off = 0;
    uint32_t name_len = 0;
    uint32_t etag_off = 0;  // in etags_: a kind byte, then the ETag (see manifest.cc)
    uint64_t size = 0;
    int64_t mtime_sec = 0;
  };
  static_assert(sizeof(Entry) == 32);

  void append(std::string_view key, uint64_t size, int64_t mtime, std::string_view etag,
              std::string_view version_id, std::string_view location);
  // As append, with the ETag already in its packed encoding (from a file's block).
  void append_encoded(std::string_view key, uint64_t size, int64_t mtime,
                      std::string_view encoded_etag, std::string_view version_id,
                      std::string_view location);
  void append_tail(std::string_view version_id, std::string_view location);

  std::string bucket_;
  std::string prefix_;
  bool has_versions_ = false;
  int64_t created_sec_ = 0;
  std::string names_;
  std::string etags_;
  std::string versions_;               // with versions: a length byte, then the id
  std::vector<uint32_t> version_off_;  // with versions: per entry, offset in versions_
  bool has_locations_ = false;
  std::string locations_;               // with locations: a varint length, then the location
  std::vector<uint32_t> location_off_;  // with locations: per entry, offset in locations_
  std::vector<Entry> entries_;
};

// Collects entries in any order; finish() sorts them. A key given twice keeps the last.
class ManifestBuilder {
 public:
  // with_locations: entries may name where their bytes are (format 2).
  ManifestBuilder(std::string bucket, std::string prefix, bool with_versions, int64_t created_sec,
                  bool with_locations = false);
  // key (and location) are relative to the prefix. kInvalidArgument for an ETag or version id
  // over 255 bytes, a key over 4 GiB, or a location without with_locations.
  Status add(std::string_view key, uint64_t size, int64_t mtime_sec, std::string_view etag,
             std::string_view version_id = {}, std::string_view location = {});
  size_t size() const { return m_.entries_.size(); }
  Manifest finish() &&;

 private:
  Manifest m_;
};

// The manifest's file bytes (see the format in docs/snapshots.md).
std::string encode_manifest(const Manifest& m);
// kCorrupt for bytes that are not a manifest (bad magic, a checksum that fails, unsorted
// keys, a short file); kNotSupported for a newer format version.
Result<Manifest> decode_manifest(std::string_view bytes);

// Whole-file helpers: write goes through a temporary file and rename, so a reader never
// sees half a manifest.
Status write_manifest_file(const Manifest& m, const std::string& path);
Result<Manifest> read_manifest_file(const std::string& path);

}  // namespace warmfs
