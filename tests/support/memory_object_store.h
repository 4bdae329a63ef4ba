// MemoryObjectStore: an ObjectStore held in memory, the in-process twin of S3 for tests.
//
// Behaves like S3 where warmfs depends on it: ETags are the hex MD5 of the bytes (as S3 gives
// for single-part uploads), get_range honours If-Match (kPreconditionFailed) and answers a
// range starting at or past the end with kRangeNotSatisfiable, list is ListObjectsV2 (keys in
// byte order, prefix, delimiter, common prefixes, max_keys counting keys and prefixes, capped
// at 1000, opaque continuation tokens). Objects are immutable snapshots: a get_range running
// while put_object replaces the key returns bytes of one version only.
//
// Thread safe: mu_ guards the key map; bytes are copied out without holding it.
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "objstore/object_store.h"

namespace warmfs {

class MemoryObjectStore final : public ObjectStore {
 public:
  // clock stamps mtimes (wall_now) and must outlive the store.
  explicit MemoryObjectStore(std::string bucket = "test-bucket",
                             Clock& clock = SystemClock::instance());

  // Test helpers (not part of ObjectStore). put_object stores or replaces key and returns
  // its new ETag.
  std::string put_object(std::string_view key, std::span<const std::byte> bytes);
  std::string put_object(std::string_view key, std::string_view text);
  // Sets an mtime explicitly (seconds since the epoch); false if key is absent.
  bool set_mtime(std::string_view key, int64_t mtime_sec);
  bool delete_object(std::string_view key);
  std::optional<std::vector<std::byte>> object_bytes(std::string_view key) const;
  size_t object_count() const;

  Result<ObjectInfo> head(std::string_view key) override;
  Result<size_t> get_range(std::string_view key, uint64_t offset, std::span<std::byte> out,
                           std::string_view if_match) override;
  Result<ListPage> list(const ListRequest& request) override;
  ObjectStoreCounters counters() const override;
  std::string describe() const override;

  // Hex MD5 of bytes, the ETag put_object assigns.
  static std::string md5_hex(std::span<const std::byte> bytes);

 private:
  struct Object {
    std::vector<std::byte> bytes;
    std::string etag;
    int64_t mtime_sec = 0;
  };
  using ObjectPtr = std::shared_ptr<const Object>;
  ObjectPtr find(std::string_view key) const;

  const std::string bucket_;
  Clock& clock_;
  mutable std::mutex mu_;  // protects objects_
  std::map<std::string, ObjectPtr, std::less<>> objects_;

  std::atomic<uint64_t> get_requests_{0};
  std::atomic<uint64_t> head_requests_{0};
  std::atomic<uint64_t> list_requests_{0};
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> errors_{0};
};

// Bytes of a string, for put_object and comparisons.
std::vector<std::byte> to_bytes(std::string_view text);

}  // namespace warmfs
