// KvDb: a KvStore (common/kv_store.h) in a RocksDB database of its own, beside the SSD
// cache's chunk index in the cache dir (it holds directory listings: meta/listing_index.h).
// RocksDB is included here and in ssd_index.cc only.
//
// Writes use RocksDB's defaults: the WAL is written on every write but not fsynced, so a
// crash of the process loses nothing and a power loss may lose the newest writes.
//
// Thread safe (RocksDB is).
#pragma once

#include <memory>
#include <string>

#include "common/kv_store.h"
#include "warmfs/result.h"

namespace warmfs {

class KvDb final : public KvStore {
 public:
  // Opens (creating if missing) the database in dir.
  static Result<std::unique_ptr<KvDb>> open(const std::string& dir);
  // Opens an existing database for reading only, beside a process that writes it (it sees
  // what was written up to the open). Writes return an error.
  static Result<std::unique_ptr<KvDb>> open_read_only(const std::string& dir);
  ~KvDb() override;
  KvDb(const KvDb&) = delete;
  KvDb& operator=(const KvDb&) = delete;

  Result<std::optional<std::string>> get(std::string_view key) const override;
  Status put(std::string_view key, std::string_view value) override;
  Status erase(std::string_view key) override;
  Status erase_prefix(std::string_view prefix) override;
  Status scan(std::string_view prefix,
              const std::function<bool(std::string_view key, std::string_view value)>& visit)
      const override;

  struct Impl;  // RocksDB handles, defined in kv_db.cc

 private:
  explicit KvDb(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace warmfs
