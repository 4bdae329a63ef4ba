#include "cli/snapshot_from_index.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "cache/kv_db.h"
#include "meta/listing_index.h"

namespace warmfs::cli {

std::function<std::string()> listing_index_stats(std::string cache_dir, int64_t ttl_ms) {
  std::string text =
      nlohmann::json{{"listing_index", {{"cache_dir", cache_dir}, {"ttl_ms", ttl_ms}}}}.dump();
  return [text] { return text; };
}

Result<std::optional<Manifest>> snapshot_from_index(const IndexSnapshotSource& src, int64_t now_ms,
                                                    int64_t created_sec, std::string* why) {
  auto db = KvDb::open_read_only(src.cache_dir + "/listings");
  if (!db.is_ok()) {
    *why = "no listing index: " + db.status().message();
    return std::optional<Manifest>();
  }
  ListingIndex index(**db, src.endpoint, src.bucket, src.prefix);
  ManifestBuilder builder(src.bucket, src.prefix, /*with_versions=*/false, created_sec);
  // Depth first from the root; every directory named in a listing must have its own.
  std::vector<std::string> pending{""};
  while (!pending.empty()) {
    const std::string dir = std::move(pending.back());
    pending.pop_back();
    auto listing = index.get(dir);
    if (!listing) {
      *why = fmt::format("the listing index lacks directory \"{}\"", dir);
      return std::optional<Manifest>();
    }
    if (now_ms - listing->listed_at_ms >= src.ttl_ms) {
      *why = fmt::format("the listing index's \"{}\" is older than the metadata TTL", dir);
      return std::optional<Manifest>();
    }
    const std::string base = dir.empty() ? std::string() : dir + "/";
    if (listing->entries.empty() && !dir.empty()) {
      WARMFS_RETURN_IF_ERROR(builder.add(base, 0, 0, kEmptyObjectEtag));
    }
    for (const DirEntry& e : listing->entries) {
      if (e.is_dir) {
        pending.push_back(base + e.name.str());
      } else {
        WARMFS_RETURN_IF_ERROR(builder.add(base + e.name.str(), e.size, e.mtime_sec, e.etag.str()));
      }
    }
  }
  return std::optional<Manifest>(std::move(builder).finish());
}

}  // namespace warmfs::cli
