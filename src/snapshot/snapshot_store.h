// SnapshotStore: an ObjectStore that shows a bucket as a Manifest froze it.
//
// It wraps the store of the manifest's bucket. list() and head() are answered from the
// manifest alone (no request), so everything above it (Metadata's listings, lookups and
// revalidations) costs nothing in the bucket, and every mount of one manifest sees the same
// keys, sizes and ETags. Reads go to the bucket pinned to the manifest's version of the
// object: with If-Match of its ETag, or, for a manifest taken with versions, by its version
// id (the bytes the snapshot was taken on, even after the key is overwritten); an entry with a
// location (a snapshot of a branch) is read from that key instead of its own. An object
// changed or deleted since the snapshot fails with kPreconditionFailed (ESTALE at the
// mount), logged once per key, never with other bytes. Writes fail with kReadOnly.
//
// Thread safe: the manifest is immutable; the set of keys already logged has its own mutex.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "objstore/object_store.h"
#include "snapshot/manifest.h"

namespace warmfs {

// Where a listing of the keys below a manifest's prefix mp starts, for ListObjectsV2's
// start-after (a full key): every key (kAll), none (kNone: all of them sort before it), or
// the keys after mp + rel (kAfter).
struct ListStart {
  enum class Kind { kAll, kNone, kAfter };
  Kind kind = Kind::kAll;
  std::string rel;
};
ListStart list_start(std::string_view mp, std::string_view start_after);

class SnapshotStore : public ObjectStore {
 public:
  // inner must outlive this store and hold the manifest's bucket. With pin_versions (and a
  // manifest taken with versions) reads name the version id; else they carry If-Match.
  SnapshotStore(ObjectStore& inner, std::shared_ptr<const Manifest> manifest,
                bool pin_versions = false);

  const Manifest& manifest() const { return *manifest_; }
  // The bucket's key that holds key's bytes: key itself, or the entry's location (a snapshot
  // of a branch). kNotFound if key is not in the snapshot.
  Result<std::string> bytes_key(std::string_view key) const;

  Result<ObjectInfo> head(std::string_view key) override;
  Result<size_t> get_range(std::string_view key, uint64_t offset, std::span<std::byte> out,
                           std::string_view if_match) override;
  using ObjectStore::get_range_progress;
  Result<size_t> get_range_progress(std::string_view key, uint64_t offset, std::span<std::byte> out,
                                    std::string_view if_match,
                                    const std::function<void(size_t)>& progress,
                                    const RangeBytesSeen& seen) override;
  // ListObjectsV2 over the manifest: delimiter "/" or none, pages of max_keys; the token is
  // this store's own.
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
  Status remove(std::string_view key) override;
  Result<std::vector<DeleteError>> remove_many(std::span<const std::string> keys) override;

  // The bucket's requests (the manifest's answers are not requests).
  ObjectStoreCounters counters() const override { return inner_.counters(); }
  std::string describe() const override { return inner_.describe(); }

 private:
  // Index of key in the manifest, if key is below its prefix and in it.
  std::optional<size_t> find(std::string_view key) const;
  ObjectInfo info_of(size_t i) const;
  std::string bytes_key_of(size_t i) const;
  // A failed read of key: a changed or deleted object becomes kPreconditionFailed, logged
  // the first time.
  Status stale(std::string_view key, size_t i, const Status& st);
  Status read_only(std::string_view what) const;

  ObjectStore& inner_;
  const std::shared_ptr<const Manifest> manifest_;
  const bool pin_versions_;
  std::mutex logged_mu_;                       // protects logged_
  std::set<std::string, std::less<>> logged_;  // keys whose change was logged
};

}  // namespace warmfs
