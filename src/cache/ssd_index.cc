#include "cache/ssd_index.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <cstring>
#include <vector>

#include "cache/rocksdb_util.h"

namespace warmfs {
namespace {

constexpr char kChunkPrefix = 'c';
constexpr char kBackPrefix = 'g';
constexpr char kRegionPrefix = 'r';
constexpr char kMetaPrefix = 'm';
constexpr uint8_t kEntryVersion1 = 1;  // without block CRCs
constexpr uint8_t kEntryVersion2 = 2;  // with them
constexpr size_t kEntryBytes = 1 + 4 + 8 + 8 + 4 + 4 + 8;
// A version 2 entry: the version 1 fields, block_bytes, then the block CRCs.
constexpr size_t kEntryBytesV2 = kEntryBytes + 4;

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_be(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

std::string chunk_key(std::string_view key) {
  std::string k(1, kChunkPrefix);
  k.append(key);
  return k;
}
std::string back_prefix(uint32_t region, uint64_t gen) {
  std::string k(1, kBackPrefix);
  put_be(k, region, 4);
  put_be(k, gen, 8);
  return k;
}
std::string back_key(const SsdIndexEntry& e) {
  std::string k = back_prefix(e.region, e.gen);
  put_be(k, e.offset, 8);
  return k;
}
std::string region_key(uint32_t region) {
  std::string k(1, kRegionPrefix);
  put_be(k, region, 4);
  return k;
}

}  // namespace

std::string encode_index_entry(const SsdIndexEntry& e) {
  const bool blocks = e.block_bytes != 0;
  std::string v;
  v.reserve(blocks ? kEntryBytesV2 + 4 * e.block_crcs.size() : kEntryBytes);
  v.push_back(static_cast<char>(blocks ? kEntryVersion2 : kEntryVersion1));
  put_be(v, e.region, 4);
  put_be(v, e.gen, 8);
  put_be(v, e.offset, 8);
  put_be(v, e.length, 4);
  put_be(v, e.crc32c, 4);
  put_be(v, static_cast<uint64_t>(e.last_read_sec), 8);
  if (blocks) {
    put_be(v, e.block_bytes, 4);
    for (uint32_t crc : e.block_crcs) put_be(v, crc, 4);
  }
  return v;
}
std::optional<SsdIndexEntry> decode_index_entry(std::string_view v) {
  if (v.empty()) return std::nullopt;
  const auto version = static_cast<uint8_t>(v[0]);
  if (version == kEntryVersion1 ? v.size() != kEntryBytes
                                : version != kEntryVersion2 || v.size() < kEntryBytesV2) {
    return std::nullopt;
  }
  const char* p = v.data() + 1;
  SsdIndexEntry e;
  e.region = static_cast<uint32_t>(get_be(p, 4));
  e.gen = get_be(p + 4, 8);
  e.offset = get_be(p + 12, 8);
  e.length = static_cast<uint32_t>(get_be(p + 20, 4));
  e.crc32c = static_cast<uint32_t>(get_be(p + 24, 4));
  e.last_read_sec = static_cast<int64_t>(get_be(p + 28, 8));
  if (version == kEntryVersion2) {
    e.block_bytes = static_cast<uint32_t>(get_be(p + 36, 4));
    if (e.block_bytes == 0) return std::nullopt;
    const uint64_t count = (uint64_t{e.length} + e.block_bytes - 1) / e.block_bytes;
    if (v.size() != kEntryBytesV2 + 4 * count) return std::nullopt;
    e.block_crcs.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      e.block_crcs[i] = static_cast<uint32_t>(get_be(v.data() + kEntryBytesV2 + 4 * i, 4));
    }
  }
  return e;
}

namespace {

Status to_status(const rocksdb::Status& s, const char* what) {
  return rocksdb_util::to_status(s, "ssd index", what);
}
using rocksdb_util::starts_with;

}  // namespace

struct SsdIndex::Impl {
  std::unique_ptr<rocksdb::DB> db;
  rocksdb::WriteOptions write_options;  // defaults: WAL on, no fsync per write
  rocksdb::ReadOptions read_options;
};

SsdIndex::SsdIndex(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SsdIndex::~SsdIndex() = default;

Result<std::unique_ptr<SsdIndex>> SsdIndex::open(const std::string& dir) {
  rocksdb::Options options;
  options.create_if_missing = true;
  // Entries are ~100 bytes: small memtables and few open files are plenty, and keep the
  // index's footprint small beside the data it describes.
  options.write_buffer_size = 16 << 20;
  options.max_open_files = 256;
  options.keep_log_file_num = 2;
  options.info_log_level = rocksdb::WARN_LEVEL;
  rocksdb::DB* raw = nullptr;
  const rocksdb::Status s = rocksdb::DB::Open(options, dir, &raw);
  if (!s.ok()) return to_status(s, "open");
  auto impl = std::make_unique<Impl>();
  impl->db.reset(raw);
  return std::unique_ptr<SsdIndex>(new SsdIndex(std::move(impl)));
}

Result<std::optional<SsdIndexEntry>> SsdIndex::get(std::string_view key) const {
  std::string value;
  const rocksdb::Status s = impl_->db->Get(impl_->read_options, chunk_key(key), &value);
  if (s.IsNotFound()) return std::optional<SsdIndexEntry>();
  if (!s.ok()) return to_status(s, "get");
  auto e = decode_index_entry(value);
  if (!e) return Status(Errc::kCorrupt, "ssd index: malformed entry");
  return e;
}

Status SsdIndex::put(std::string_view key, const SsdIndexEntry& entry) {
  rocksdb::WriteBatch batch;
  const std::string ck = chunk_key(key);
  std::string old;
  const rocksdb::Status g = impl_->db->Get(impl_->read_options, ck, &old);
  if (g.ok()) {
    if (auto e = decode_index_entry(old); e && !e->same_place(entry)) batch.Delete(back_key(*e));
  } else if (!g.IsNotFound()) {
    return to_status(g, "get");
  }
  batch.Put(ck, encode_index_entry(entry));
  batch.Put(back_key(entry), rocksdb::Slice(key.data(), key.size()));
  return to_status(impl_->db->Write(impl_->write_options, &batch), "put");
}

Result<bool> SsdIndex::erase_if(std::string_view key, const SsdIndexEntry& expected) {
  WARMFS_ASSIGN_OR_RETURN(auto current, get(key));
  if (!current || !current->same_place(expected)) return false;
  rocksdb::WriteBatch batch;
  batch.Delete(chunk_key(key));
  batch.Delete(back_key(*current));
  WARMFS_RETURN_IF_ERROR(to_status(impl_->db->Write(impl_->write_options, &batch), "delete"));
  return true;
}

Result<uint64_t> SsdIndex::erase_region(uint32_t region, uint64_t gen) {
  const std::string prefix = back_prefix(region, gen);
  rocksdb::WriteBatch batch;
  uint64_t n = 0;
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(impl_->read_options));
  for (it->Seek(prefix); it->Valid() && starts_with(it->key(), prefix); it->Next()) {
    batch.Delete(it->key());
    const std::string ck = chunk_key(std::string_view(it->value().data(), it->value().size()));
    // The key may since have been stored elsewhere: only delete an entry that points here.
    std::string value;
    if (impl_->db->Get(impl_->read_options, ck, &value).ok()) {
      auto e = decode_index_entry(value);
      if (!e || (e->region == region && e->gen == gen)) batch.Delete(ck);
    }
    ++n;
  }
  WARMFS_RETURN_IF_ERROR(to_status(it->status(), "iterate"));
  WARMFS_RETURN_IF_ERROR(to_status(impl_->db->Write(impl_->write_options, &batch), "delete"));
  return n;
}

Status SsdIndex::clear() {
  rocksdb::WriteBatch batch;
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(impl_->read_options));
  for (it->SeekToFirst(); it->Valid(); it->Next()) batch.Delete(it->key());
  WARMFS_RETURN_IF_ERROR(to_status(it->status(), "iterate"));
  return to_status(impl_->db->Write(impl_->write_options, &batch), "clear");
}

Status SsdIndex::put_region_gen(uint32_t region, uint64_t gen) {
  std::string v;
  put_be(v, gen, 8);
  return to_status(impl_->db->Put(impl_->write_options, region_key(region), v), "put region");
}

Result<std::map<uint32_t, uint64_t>> SsdIndex::region_gens() const {
  std::map<uint32_t, uint64_t> out;
  const std::string prefix(1, kRegionPrefix);
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(impl_->read_options));
  for (it->Seek(prefix); it->Valid() && starts_with(it->key(), prefix); it->Next()) {
    if (it->key().size() != 5 || it->value().size() != 8) continue;
    out[static_cast<uint32_t>(get_be(it->key().data() + 1, 4))] = get_be(it->value().data(), 8);
  }
  WARMFS_RETURN_IF_ERROR(to_status(it->status(), "iterate"));
  return out;
}

Result<std::optional<std::string>> SsdIndex::get_meta(std::string_view name) const {
  std::string k(1, kMetaPrefix);
  k.append(name);
  std::string value;
  const rocksdb::Status s = impl_->db->Get(impl_->read_options, k, &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return to_status(s, "get meta");
  return std::optional<std::string>(std::move(value));
}

Status SsdIndex::put_meta(std::string_view name, std::string_view value) {
  std::string k(1, kMetaPrefix);
  k.append(name);
  return to_status(
      impl_->db->Put(impl_->write_options, k, rocksdb::Slice(value.data(), value.size())),
      "put meta");
}

Result<uint64_t> SsdIndex::scan(
    const std::function<bool(std::string_view key, const SsdIndexEntry&)>& visit) {
  const std::string prefix(1, kChunkPrefix);
  rocksdb::WriteBatch drops;
  uint64_t dropped = 0;
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(impl_->read_options));
  for (it->Seek(prefix); it->Valid() && starts_with(it->key(), prefix); it->Next()) {
    const std::string_view key(it->key().data() + 1, it->key().size() - 1);
    auto e = decode_index_entry(std::string_view(it->value().data(), it->value().size()));
    if (e && visit(key, *e)) continue;
    drops.Delete(it->key());
    if (e) drops.Delete(back_key(*e));
    ++dropped;
  }
  WARMFS_RETURN_IF_ERROR(to_status(it->status(), "iterate"));
  if (dropped > 0) {
    WARMFS_RETURN_IF_ERROR(to_status(impl_->db->Write(impl_->write_options, &drops), "delete"));
  }
  return dropped;
}

}  // namespace warmfs
