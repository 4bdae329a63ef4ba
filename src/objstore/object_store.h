// ObjectStore: the narrow interface between warmfs and a bucket.
//
// One instance is bound to one bucket. Keys are full object keys (the mount's prefix is
// applied by the caller). Implementations: S3ObjectStore (S3 over libcurl, SigV4), and in
// tests MemoryObjectStore and FaultInjectingStore (tests/support). All methods are thread
// safe and blocking; they retry transient failures themselves and return a Status once they
// give up. Write operations (put, multipart, copy, delete) arrive with the write path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "warmfs/result.h"

namespace warmfs {

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string etag;       // as the server sent it, quotes stripped
  int64_t mtime_sec = 0;  // Last-Modified, seconds since the epoch
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
};

// Counters every store keeps, for `warmfs stats`.
struct ObjectStoreCounters {
  uint64_t get_requests = 0;
  uint64_t head_requests = 0;
  uint64_t list_requests = 0;
  uint64_t bytes_read = 0;   // body bytes of GETs
  uint64_t retries = 0;
  uint64_t errors = 0;       // requests that failed after all retries
};

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

  // One page of ListObjectsV2.
  virtual Result<ListPage> list(const ListRequest& request) = 0;

  virtual ObjectStoreCounters counters() const = 0;

  // "s3://bucket" style name, for messages.
  virtual std::string describe() const = 0;
};

}  // namespace warmfs
