// KvStore: a small persistent key-value store, as the layers above the caches see one (the
// metadata layer keeps directory listings in one: meta/listing_index.h). Keys and values are
// bytes; keys sort bytewise. The implementation on disk is cache/kv_db.h (RocksDB); tests use
// an in-memory map.
//
// Not a transaction log: a write may be lost in a power cut (never half applied), so what
// is kept is a hint that its user checks, never the only copy of anything.
//
// Thread safe (implementations must be).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "warmfs/result.h"

namespace warmfs {

class KvStore {
 public:
  virtual ~KvStore() = default;
  // The value of key, or nullopt.
  virtual Result<std::optional<std::string>> get(std::string_view key) const = 0;
  virtual Status put(std::string_view key, std::string_view value) = 0;
  // Deletes key (no error if absent).
  virtual Status erase(std::string_view key) = 0;
  // Deletes every key that starts with prefix.
  virtual Status erase_prefix(std::string_view prefix) = 0;
  // Calls visit for every key that starts with prefix, in key order, until it returns false.
  virtual Status scan(
      std::string_view prefix,
      const std::function<bool(std::string_view key, std::string_view value)>& visit) const = 0;
};

}  // namespace warmfs
