// ObjectStore: the narrow interface between warmfs and a bucket.
//
// One instance is bound to one bucket. Keys are full object keys (the mount's prefix is
// applied by the caller). Implementations: S3ObjectStore (S3 over libcurl, SigV4), and in
// tests MemoryObjectStore and FaultInjectingStore (tests/support). All methods are thread
// safe and blocking; they retry transient failures themselves and return a Status once they
// give up.
//
// Writes follow S3 semantics, which make every one of them safe to repeat: a PUT, an
// UploadPart, a Complete, a Copy or a Delete sent twice leaves the bucket as sent once, so
// implementations retry them like reads. An object becomes visible whole, at put() or
// complete_multipart() return, never in part. There is no rename: a rename is copy() then
// remove().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "warmfs/result.h"

namespace warmfs {

// An object's user metadata: its x-amz-meta-NAME headers as NAME (lower case) -> value.
using UserMetadata = std::map<std::string, std::string>;

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string etag;       // as the server sent it, quotes stripped
  int64_t mtime_sec = 0;  // Last-Modified, seconds since the epoch
  // From head() only (a listing carries neither): Content-Type and user metadata.
  std::string content_type;
  UserMetadata metadata;
  std::string version_id;  // list_versions() only; empty elsewhere
};

// What an object carries besides its bytes, as a write sets it.
struct ObjectHeaders {
  std::string content_type;  // empty: none sent (S3 then stores binary/octet-stream)
  UserMetadata metadata;     // sent as x-amz-meta-NAME: VALUE (printable ASCII values)
};

struct ListPage {
  std::vector<ObjectInfo> objects;           // keys under the prefix, not past the delimiter
  std::vector<std::string> common_prefixes;  // full prefixes, ending in the delimiter
  std::string next_token;                    // continuation token when truncated
  bool truncated = false;
};

struct ListRequest {
  std::string prefix;
  std::string delimiter = "/";
  std::string continuation_token;
  int max_keys = 1000;
  // Without a continuation token: list only keys after this one (ListObjectsV2 start-after;
  // key-marker for list_versions). Common prefixes of such keys are named again, even when
  // start_after lies inside them.
  std::string start_after;
};

// Counters every store keeps, for `warmfs stats`.
struct ObjectStoreCounters {
  uint64_t get_requests = 0;
  uint64_t head_requests = 0;
  uint64_t list_requests = 0;
  uint64_t bytes_read = 0;  // body bytes of GETs
  uint64_t retries = 0;
  uint64_t errors = 0;              // requests that failed after all retries
  uint64_t bytes_written = 0;       // body bytes of successful PUTs and UploadParts
  uint64_t put_requests = 0;        // put() calls (PutObject)
  uint64_t copy_requests = 0;       // copy() calls, single or multipart
  uint64_t delete_requests = 0;     // remove() calls and DeleteObjects batches
  uint64_t multipart_requests = 0;  // create, upload_part(_copy), complete, abort, list uploads

  // Adds another store's counters (a cache server has one store per bucket).
  ObjectStoreCounters& operator+=(const ObjectStoreCounters& o) {
    get_requests += o.get_requests;
    head_requests += o.head_requests;
    list_requests += o.list_requests;
    bytes_read += o.bytes_read;
    retries += o.retries;
    errors += o.errors;
    bytes_written += o.bytes_written;
    put_requests += o.put_requests;
    copy_requests += o.copy_requests;
    delete_requests += o.delete_requests;
    multipart_requests += o.multipart_requests;
    return *this;
  }
};

struct PutOptions {
  // Content-MD5 (base64 MD5 of the body): the server rejects a body that arrives changed.
  // On by default: the cost is one MD5 pass, the gain is no silently corrupted object.
  bool content_md5 = true;
  // x-amz-checksum-crc32c (base64 of the big-endian CRC32C): verified and stored by the
  // server, so a later reader can check it too. Off by default: not every S3 clone has it.
  bool checksum_crc32c = false;
  // If-None-Match: * -- create only; kPreconditionFailed if the key exists.
  bool if_none_match = false;
  // If-Match: replace only this version (an ETag); kPreconditionFailed if it changed.
  std::string if_match;
  std::string content_type;  // empty: none sent (S3 then stores binary/octet-stream)
  UserMetadata metadata;     // sent as x-amz-meta-NAME headers
};

// One uploaded part, as upload_part() returns it and complete_multipart() takes it.
struct CompletedPart {
  int part_number = 0;  // 1..10000
  std::string etag;     // quotes stripped
  uint64_t size = 0;    // bytes in the part (complete_multipart sums them for ObjectInfo::size)
};

struct MultipartUpload {
  std::string key;
  std::string upload_id;
  int64_t initiated_sec = 0;  // seconds since the epoch
};

// A key a batch delete could not remove, with S3's reason.
struct DeleteError {
  std::string key;
  std::string code;  // "AccessDenied", ...
  std::string message;
};

// Limits S3 puts on multipart uploads.
inline constexpr int kMaxPartNumber = 10000;
inline constexpr uint64_t kMinPartSize = 5ull << 20;  // every part but the last
inline constexpr uint64_t kMaxPartSize = 5ull << 30;  // and the most one CopyObject takes
inline constexpr size_t kMaxDeleteBatch = 1000;       // keys per DeleteObjects

// Shown the bytes of a range GET as they land (ObjectStore::get_range_progress).
using RangeBytesSeen = std::function<void(uint64_t at, std::span<const std::byte> bytes)>;

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // HEAD: size, ETag and mtime of one object. kNotFound if absent.
  virtual Result<ObjectInfo> head(std::string_view key) = 0;

  // Ranged GET of [offset, offset + out.size()) into out. Returns the number of bytes
  // written, which is less than out.size() only at the end of the object. When if_match is
  // not empty the request carries If-Match and fails with kPreconditionFailed if the object
  // no longer has that ETag. Never returns bytes of a truncated body: a short body that is
  // not the end of the object is retried, then reported as kIo.
  virtual Result<size_t> get_range(std::string_view key, uint64_t offset, std::span<std::byte> out,
                                   std::string_view if_match) = 0;

  // As get_range, and reports the body as it lands: progress(n) says the first n bytes of
  // out are in place and final (never written again: a retry resumes after them), called on
  // this thread with n increasing. A caller can use a range's first bytes while the rest is
  // on its way. This default reports once, at the end; S3 reports as bytes arrive when
  // if_match pins the version (without it a retry may bring another version, so it starts
  // over and reports at the end).
  //
  // seen, when given, may be shown the body's bytes as they land, before they are in out:
  // seen(at, bytes) for bytes [at, at + bytes.size()) of out, in order of at; a retry may show
  // bytes at offsets shown before again (the same bytes). A caller can checksum the bytes
  // while they are still in the core's cache. Stores need not call it (this default does not),
  // and it may stop being called partway: a caller falls back to reading out.
  virtual Result<size_t> get_range_progress(std::string_view key, uint64_t offset,
                                            std::span<std::byte> out, std::string_view if_match,
                                            const std::function<void(size_t)>& progress,
                                            const RangeBytesSeen& seen) {
    (void)seen;
    Result<size_t> r = get_range(key, offset, out, if_match);
    if (r.is_ok() && progress) progress(*r);
    return r;
  }
  Result<size_t> get_range_progress(std::string_view key, uint64_t offset, std::span<std::byte> out,
                                    std::string_view if_match,
                                    const std::function<void(size_t)>& progress) {
    return get_range_progress(key, offset, out, if_match, progress, nullptr);
  }

  // One page of ListObjectsV2.
  virtual Result<ListPage> list(const ListRequest& request) = 0;

  // One page of ListObjectVersions, as list() but each object is its latest version, with
  // its version_id set; keys whose latest version is a delete marker are left out. The
  // page's next_token is this store's own. kNotSupported by stores without versions.
  virtual Result<ListPage> list_versions(const ListRequest& request) {
    (void)request;
    return Status(Errc::kNotSupported, "this store does not list object versions");
  }

  // As get_range_progress, of one version of the object (a versioned bucket keeps it after
  // the key is overwritten or deleted). kNotFound if the version is gone.
  virtual Result<size_t> get_range_version(std::string_view key, std::string_view version_id,
                                           uint64_t offset, std::span<std::byte> out,
                                           const std::function<void(size_t)>& progress,
                                           const RangeBytesSeen& seen) {
    (void)key, (void)version_id, (void)offset, (void)out, (void)progress, (void)seen;
    return Status(Errc::kNotSupported, "this store does not read object versions");
  }

  // PutObject of body as the whole object (replacing any). Returns the key, the body's size,
  // the new ETag and the mtime (the server's Date, or now). kPreconditionFailed when a
  // condition in options does not hold; kCorrupt when the server saw a different body than
  // the checksum promised (after retries).
  virtual Result<ObjectInfo> put(std::string_view key, std::span<const std::byte> body,
                                 const PutOptions& options) = 0;

  // Starts a multipart upload of key; returns its upload id. Nothing is visible at key until
  // complete_multipart(); an upload never completed or aborted keeps its parts (and costs
  // storage) until aborted. The object gets headers' Content-Type and user metadata.
  virtual Result<std::string> create_multipart(std::string_view key,
                                               const ObjectHeaders& headers = {}) = 0;

  // Uploads body as part part_number (1..10000) of the upload, with Content-MD5. Uploading
  // the same number again replaces the part. kNotFound if the upload is gone. Parts but the
  // last must be at least kMinPartSize, which complete_multipart() checks.
  virtual Result<CompletedPart> upload_part(std::string_view key, std::string_view upload_id,
                                            int part_number, std::span<const std::byte> body) = 0;

  // Server-side copy of bytes [first, last] of src_key into a part. When src_if_match is not
  // empty the copy fails with kPreconditionFailed if src_key no longer has that ETag.
  virtual Result<CompletedPart> upload_part_copy(std::string_view key, std::string_view upload_id,
                                                 int part_number, std::string_view src_key,
                                                 uint64_t first, uint64_t last,
                                                 std::string_view src_if_match) = 0;

  // Assembles parts (ascending part numbers, ETags as returned) into the object and ends the
  // upload. Returns the object's ETag (S3's "hex-N" form) and size (the sum of parts' sizes).
  // kInvalidArgument for a missing, mismatched, unordered or too small part; kNotFound if the
  // upload is gone; kIo with the S3 code for an error S3 reports in a 200 answer.
  virtual Result<ObjectInfo> complete_multipart(std::string_view key, std::string_view upload_id,
                                                std::span<const CompletedPart> parts) = 0;

  // Ends the upload and deletes its parts. Ok if the upload is already gone.
  virtual Status abort_multipart(std::string_view key, std::string_view upload_id) = 0;

  // Every upload in progress under prefix, in key order (all pages).
  virtual Result<std::vector<MultipartUpload>> list_multipart_uploads(std::string_view prefix) = 0;

  // Server-side copy of src_key to dst_key (replacing it). When if_match_etag is not empty,
  // kPreconditionFailed if src_key no longer has that ETag. kNotFound if src_key is absent.
  // Objects too large for one CopyObject are copied part by part (the store's threshold).
  // Returns dst_key's new ETag, size and mtime. The copy keeps the source's Content-Type and
  // user metadata.
  virtual Result<ObjectInfo> copy(std::string_view src_key, std::string_view dst_key,
                                  std::string_view if_match_etag) = 0;

  // Gives key new Content-Type and user metadata (replacing all of it), keeping its bytes: a
  // server-side copy onto itself (CopyObject with x-amz-metadata-directive REPLACE), part by
  // part for objects larger than one CopyObject takes. current is the object as last seen:
  // its size picks the way, and when its etag is not empty the copy fails with
  // kPreconditionFailed if key no longer has it. kNotFound if key is absent. Returns the
  // object's new ETag, size and mtime.
  virtual Result<ObjectInfo> replace_metadata(std::string_view key, const ObjectInfo& current,
                                              const ObjectHeaders& headers) = 0;

  // DeleteObject. Ok if the key is absent.
  virtual Status remove(std::string_view key) = 0;

  // Deletes keys (any number; sent kMaxDeleteBatch at a time). Returns the keys the server
  // refused to delete, with its reasons (empty when all went); absent keys count as deleted.
  virtual Result<std::vector<DeleteError>> remove_many(std::span<const std::string> keys) = 0;

  virtual ObjectStoreCounters counters() const = 0;

  // "s3://bucket" style name, for messages.
  virtual std::string describe() const = 0;
};

}  // namespace warmfs
