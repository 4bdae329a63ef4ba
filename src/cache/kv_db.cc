#include "cache/kv_db.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <cstring>

#include "cache/rocksdb_util.h"

namespace warmfs {
namespace {

Status to_status(const rocksdb::Status& s, const char* what) {
  return rocksdb_util::to_status(s, "key-value db", what);
}
using rocksdb_util::slice;
using rocksdb_util::starts_with;

// A read-only open beside the mount must not touch the mount's LOG file (RocksDB would
// rotate it): its info log goes nowhere.
class NullLogger final : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char*, va_list) override {}
};

}  // namespace

struct KvDb::Impl {
  std::unique_ptr<rocksdb::DB> db;
  rocksdb::WriteOptions write_options;  // defaults: WAL on, no fsync per write
  rocksdb::ReadOptions read_options;
};

KvDb::KvDb(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KvDb::~KvDb() = default;

Result<std::unique_ptr<KvDb>> KvDb::open(const std::string& dir) {
  rocksdb::Options options;
  options.create_if_missing = true;
  // Values are listings of up to a few hundred KB, read once per directory per mount: small
  // memtables and few open files keep the footprint small.
  options.write_buffer_size = 8 << 20;
  options.max_open_files = 64;
  options.keep_log_file_num = 2;
  options.info_log_level = rocksdb::WARN_LEVEL;
  options.compression = rocksdb::kNoCompression;  // values are compact already
  rocksdb::DB* raw = nullptr;
  const rocksdb::Status s = rocksdb::DB::Open(options, dir, &raw);
  if (!s.ok()) return to_status(s, "open");
  auto impl = std::make_unique<Impl>();
  impl->db.reset(raw);
  return std::unique_ptr<KvDb>(new KvDb(std::move(impl)));
}

Result<std::unique_ptr<KvDb>> KvDb::open_read_only(const std::string& dir) {
  rocksdb::Options options;
  options.max_open_files = 64;
  options.info_log = std::make_shared<NullLogger>();
  rocksdb::DB* raw = nullptr;
  const rocksdb::Status s = rocksdb::DB::OpenForReadOnly(options, dir, &raw);
  if (!s.ok()) return to_status(s, "open");
  auto impl = std::make_unique<Impl>();
  impl->db.reset(raw);
  return std::unique_ptr<KvDb>(new KvDb(std::move(impl)));
}

Result<std::optional<std::string>> KvDb::get(std::string_view key) const {
  std::string value;
  const rocksdb::Status s = impl_->db->Get(impl_->read_options, slice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return to_status(s, "get");
  return std::optional<std::string>(std::move(value));
}

Status KvDb::put(std::string_view key, std::string_view value) {
  return to_status(impl_->db->Put(impl_->write_options, slice(key), slice(value)), "put");
}

Status KvDb::erase(std::string_view key) {
  return to_status(impl_->db->Delete(impl_->write_options, slice(key)), "delete");
}

Status KvDb::erase_prefix(std::string_view prefix) {
  rocksdb::WriteBatch batch;
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(impl_->read_options));
  for (it->Seek(slice(prefix)); it->Valid() && starts_with(it->key(), prefix); it->Next()) {
    batch.Delete(it->key());
  }
  if (Status s = to_status(it->status(), "iterate"); !s.is_ok()) return s;
  if (batch.Count() == 0) return Status::ok();
  return to_status(impl_->db->Write(impl_->write_options, &batch), "delete");
}

Status KvDb::scan(std::string_view prefix,
                  const std::function<bool(std::string_view, std::string_view)>& visit) const {
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(impl_->read_options));
  for (it->Seek(slice(prefix)); it->Valid() && starts_with(it->key(), prefix); it->Next()) {
    if (!visit(std::string_view(it->key().data(), it->key().size()),
               std::string_view(it->value().data(), it->value().size()))) {
      break;
    }
  }
  return to_status(it->status(), "iterate");
}

}  // namespace warmfs
