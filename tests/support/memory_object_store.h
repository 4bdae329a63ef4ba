// MemoryObjectStore: an ObjectStore held in memory, the in-process twin of S3 for tests.
//
// Behaves like S3 where warmfs depends on it: ETags are the hex MD5 of the bytes (as S3 gives
// for single-part uploads), get_range honours If-Match (kPreconditionFailed) and answers a
// range starting at or past the end with kRangeNotSatisfiable, list is ListObjectsV2 (keys in
// byte order, prefix, delimiter, common prefixes, max_keys counting keys and prefixes, capped
// at 1000, opaque continuation tokens, start_after). Objects are immutable snapshots: a
// get_range running while put_object replaces the key returns bytes of one version only.
//
// Writes follow S3 too: put honours If-None-Match / If-Match; multipart uploads keep their
// parts apart until complete_multipart, which checks part order, ETags and the 5 MiB
// minimum (settable) and gives the object S3's "md5-of-md5s-N" ETag; abort drops the parts;
// copy gives the new object the MD5 ETag of its bytes (as one CopyObject does); removing an
// absent key is ok. Checksum options are accepted and not needed (bytes cannot change here).
// Content-Type and user metadata are kept as S3 keeps them: set by put and create_multipart,
// carried by copy, replaced by replace_metadata, returned by head only.
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

class MemoryObjectStore : public ObjectStore {
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
  // Uploads in progress (created, not completed or aborted).
  size_t upload_count() const;
  // Smallest size complete_multipart accepts for a part that is not the last (S3: 5 MiB).
  void set_min_part_size(uint64_t bytes);

  Result<ObjectInfo> head(std::string_view key) override;
  Result<size_t> get_range(std::string_view key, uint64_t offset, std::span<std::byte> out,
                           std::string_view if_match) override;
  Result<ListPage> list(const ListRequest& request) override;
  Result<ObjectInfo> put(std::string_view key, std::span<const std::byte> body,
                         const PutOptions& options) override;
  Result<std::string> create_multipart(std::string_view key,
                                       const ObjectHeaders& headers = {}) override;
  Result<CompletedPart> upload_part(std::string_view key, std::string_view upload_id,
                                    int part_number, std::span<const std::byte> body) override;
  Result<CompletedPart> upload_part_copy(std::string_view key, std::string_view upload_id,
                                         int part_number, std::string_view src_key, uint64_t first,
                                         uint64_t last, std::string_view src_if_match) override;
  Result<ObjectInfo> complete_multipart(std::string_view key, std::string_view upload_id,
                                        std::span<const CompletedPart> parts) override;
  Status abort_multipart(std::string_view key, std::string_view upload_id) override;
  Result<std::vector<MultipartUpload>> list_multipart_uploads(std::string_view prefix) override;
  Result<ObjectInfo> copy(std::string_view src_key, std::string_view dst_key,
                          std::string_view if_match_etag) override;
  Result<ObjectInfo> replace_metadata(std::string_view key, const ObjectInfo& current,
                                      const ObjectHeaders& headers) override;
  // Test helper: sets key's user metadata as another client would; false if key is absent.
  bool set_metadata(std::string_view key, const UserMetadata& metadata);
  Status remove(std::string_view key) override;
  Result<std::vector<DeleteError>> remove_many(std::span<const std::string> keys) override;

  ObjectStoreCounters counters() const override;
  std::string describe() const override;

  // Hex MD5 of bytes, the ETag put_object assigns.
  static std::string md5_hex(std::span<const std::byte> bytes);
  // S3's ETag for an object assembled from parts with these (hex MD5) ETags: "hex-N".
  static std::string multipart_etag(const std::vector<std::string>& part_etags);

 private:
  struct Object {
    std::vector<std::byte> bytes;
    std::string etag;
    int64_t mtime_sec = 0;
    ObjectHeaders headers;
  };
  using ObjectPtr = std::shared_ptr<const Object>;
  struct Part {
    std::vector<std::byte> bytes;
    std::string etag;
  };
  struct Upload {
    std::string key;
    int64_t initiated_sec = 0;
    std::map<int, Part> parts;
    ObjectHeaders headers;
  };
  ObjectPtr find(std::string_view key) const;
  int64_t now_sec() const;
  // Stores part_number of upload_id (checked against key), under mu_.
  Result<CompletedPart> store_part(std::string_view key, std::string_view upload_id,
                                   int part_number, std::span<const std::byte> bytes);
  template <typename T>
  Result<T> fail(Errc code, std::string message);

  const std::string bucket_;
  Clock& clock_;
  mutable std::mutex mu_;  // protects objects_, uploads_, next_upload_ and min_part_size_
  std::map<std::string, ObjectPtr, std::less<>> objects_;
  std::map<std::string, Upload, std::less<>> uploads_;  // by upload id
  uint64_t next_upload_ = 1;
  uint64_t min_part_size_ = kMinPartSize;

  std::atomic<uint64_t> get_requests_{0};
  std::atomic<uint64_t> head_requests_{0};
  std::atomic<uint64_t> list_requests_{0};
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> errors_{0};
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<uint64_t> put_requests_{0};
  std::atomic<uint64_t> copy_requests_{0};
  std::atomic<uint64_t> delete_requests_{0};
  std::atomic<uint64_t> multipart_requests_{0};
};

// Bytes of a string, for put_object and comparisons.
std::vector<std::byte> to_bytes(std::string_view text);

}  // namespace warmfs
