#include "snapshot/branch_record.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/reserved_names.h"
#include "snapshot/manifest.h"

namespace warmfs {
namespace {

constexpr char kFormat[] = "warmfs-branch";

const char* kind_name(BranchEntry::Kind k) {
  switch (k) {
    case BranchEntry::Kind::kData:
      return "data";
    case BranchEntry::Kind::kSnapshot:
      return "snapshot";
    case BranchEntry::Kind::kDeleted:
      return "deleted";
  }
  return "deleted";
}

}  // namespace

std::string branch_root(std::string_view prefix, std::string_view name) {
  return fmt::format("{}{}/branches/{}/", prefix, kReservedDirName, name);
}

std::string branch_record_key(std::string_view prefix, std::string_view name) {
  return branch_root(prefix, name) + "record";
}

std::string branch_data_root(std::string_view prefix, std::string_view name) {
  return branch_root(prefix, name) + "data/";
}

std::string branch_pins_root(std::string_view prefix, std::string_view name) {
  return branch_root(prefix, name) + "pins/";
}

std::string encode_branch_record(const BranchRecord& r) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& [key, e] : r.entries) {
    nlohmann::json j = {{"key", key}, {"kind", kind_name(e.kind)}};
    if (e.kind != BranchEntry::Kind::kDeleted) {
      j["target"] = e.target;
      j["size"] = e.size;
      j["etag"] = e.etag;
      j["mtime"] = e.mtime_sec;
    }
    entries.push_back(std::move(j));
  }
  nlohmann::json j = {
      {"format", kFormat},
      {"version", kBranchRecordVersion},
      {"bucket", r.bucket},
      {"prefix", r.prefix},
      {"branch", r.branch},
      {"snapshot",
       {{"name", r.snapshot}, {"keys", r.snapshot_keys}, {"created", r.snapshot_created}}},
      {"writer", r.writer},
      {"generation", r.generation},
      {"created", r.created_sec},
      {"updated", r.updated_sec},
      {"entries", std::move(entries)},
  };
  return j.dump(1) + "\n";
}

Result<BranchRecord> decode_branch_record(std::string_view bytes) {
  auto j = nlohmann::json::parse(bytes, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kFormat) {
    return Status(Errc::kCorrupt, "not a warmfs branch record");
  }
  try {
    const auto version = j.at("version").get<uint32_t>();
    if (version > kBranchRecordVersion) {
      return Status(Errc::kNotSupported,
                    fmt::format("branch record version {} is newer than this warmfs reads ({})",
                                version, kBranchRecordVersion));
    }
    BranchRecord r;
    r.bucket = j.at("bucket").get<std::string>();
    r.prefix = j.at("prefix").get<std::string>();
    r.branch = j.at("branch").get<std::string>();
    const auto& s = j.at("snapshot");
    r.snapshot = s.at("name").get<std::string>();
    r.snapshot_keys = s.at("keys").get<uint64_t>();
    r.snapshot_created = s.at("created").get<int64_t>();
    r.writer = j.at("writer").get<std::string>();
    r.generation = j.at("generation").get<uint64_t>();
    r.created_sec = j.at("created").get<int64_t>();
    r.updated_sec = j.at("updated").get<int64_t>();
    for (const auto& e : j.at("entries")) {
      BranchEntry b;
      const auto kind = e.at("kind").get<std::string>();
      if (kind == "data") {
        b.kind = BranchEntry::Kind::kData;
      } else if (kind == "snapshot") {
        b.kind = BranchEntry::Kind::kSnapshot;
      } else if (kind == "deleted") {
        b.kind = BranchEntry::Kind::kDeleted;
      } else {
        return Status(Errc::kCorrupt, "branch record entry of unknown kind '" + kind + "'");
      }
      if (b.kind != BranchEntry::Kind::kDeleted) {
        b.target = e.at("target").get<std::string>();
        b.size = e.at("size").get<uint64_t>();
        b.etag = e.at("etag").get<std::string>();
        b.mtime_sec = e.at("mtime").get<int64_t>();
        if (b.target.empty()) return Status(Errc::kCorrupt, "branch record entry without target");
      }
      auto key = e.at("key").get<std::string>();
      if (key.empty()) return Status(Errc::kCorrupt, "branch record entry with an empty key");
      if (!r.entries.emplace(std::move(key), std::move(b)).second) {
        return Status(Errc::kCorrupt, "branch record names a key twice");
      }
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Status(Errc::kCorrupt, fmt::format("damaged branch record: {}", e.what()));
  }
}

Result<BranchRecord> load_branch_record(ObjectStore& store, std::string_view prefix,
                                        std::string_view name, ObjectInfo* head) {
  const std::string key = branch_record_key(prefix, name);
  WARMFS_ASSIGN_OR_RETURN(ObjectInfo info, store.head(key));
  std::string bytes(info.size, '\0');
  WARMFS_ASSIGN_OR_RETURN(
      size_t got,
      store.get_range(key, 0, std::as_writable_bytes(std::span(bytes.data(), bytes.size())),
                      info.etag));
  bytes.resize(got);
  auto r = decode_branch_record(bytes);
  if (!r.is_ok()) return Status(r.code(), fmt::format("{}: {}", key, r.status().message()));
  if (r->prefix != prefix || r->branch != name) {
    return Status(Errc::kCorrupt, fmt::format("{} is the record of branch '{}' of prefix '{}'", key,
                                              r->branch, r->prefix));
  }
  if (head != nullptr) *head = std::move(info);
  return r;
}

Status pin_branch(ObjectStore& store, std::string_view prefix, std::string_view name,
                  std::string_view pin) {
  return store.put(branch_pins_root(prefix, name) + std::string(pin), {}, PutOptions{}).status();
}

Result<Manifest> branch_manifest(const Manifest& base, const BranchRecord& r, int64_t created_sec) {
  if (r.bucket != base.bucket() || r.prefix != base.prefix() || r.snapshot_keys != base.size() ||
      r.snapshot_created != base.created_sec()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("branch '{}' is not of this snapshot", r.branch));
  }
  const std::string data_loc =
      branch_data_root(r.prefix, r.branch).substr(r.prefix.size());  // relative to the prefix
  ManifestBuilder b(base.bucket(), base.prefix(), base.has_versions(), created_sec, true);
  for (size_t i = 0; i < base.size(); ++i) {
    if (r.entries.count(base.key(i)) != 0) continue;
    WARMFS_RETURN_IF_ERROR(b.add(base.key(i), base.object_size(i), base.mtime_sec(i), base.etag(i),
                                 base.version_id(i), base.location(i)));
  }
  for (const auto& [key, e] : r.entries) {
    if (e.kind == BranchEntry::Kind::kData) {
      WARMFS_RETURN_IF_ERROR(b.add(key, e.size, e.mtime_sec, e.etag, {}, data_loc + e.target));
    } else if (e.kind == BranchEntry::Kind::kSnapshot) {
      const auto j = base.find(e.target);
      if (!j) {
        return Status(Errc::kCorrupt, fmt::format("branch '{}' names {} as {}, which the snapshot "
                                                  "lacks",
                                                  r.branch, key, e.target));
      }
      const std::string_view loc = base.location(*j);
      WARMFS_RETURN_IF_ERROR(b.add(key, e.size, e.mtime_sec, e.etag, base.version_id(*j),
                                   loc.empty() ? std::string_view(e.target) : loc));
    }
  }
  return std::move(b).finish();
}

}  // namespace warmfs
