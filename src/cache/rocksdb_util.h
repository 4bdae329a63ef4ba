// What the SSD index (ssd_index.cc) and the listing database (kv_db.cc) share about RocksDB:
// its status as a warmfs Status, and slices of string views. Included only in src/cache/.
#pragma once

#include <rocksdb/slice.h>
#include <rocksdb/status.h>

#include <cstring>
#include <string>
#include <string_view>

#include "warmfs/result.h"

namespace warmfs::rocksdb_util {

// ok() for an ok status; else the nearest Errc (kNoSpace, kCorrupt, ...; kIo otherwise), with
// a message "WHO WHAT: RocksDB's text".
inline Status to_status(const rocksdb::Status& s, std::string_view who, const char* what) {
  if (s.ok()) return Status::ok();
  Errc code = Errc::kIo;
  if (s.IsNoSpace())
    code = Errc::kNoSpace;
  else if (s.IsCorruption())
    code = Errc::kCorrupt;
  else if (s.IsNotSupported())
    code = Errc::kNotSupported;
  else if (s.IsInvalidArgument())
    code = Errc::kInvalidArgument;
  return Status(code, std::string(who) + " " + what + ": " + s.ToString());
}

inline rocksdb::Slice slice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

inline bool starts_with(const rocksdb::Slice& s, std::string_view prefix) {
  return s.size() >= prefix.size() && std::memcmp(s.data(), prefix.data(), prefix.size()) == 0;
}

}  // namespace warmfs::rocksdb_util
