// Metadata and the listing index (meta/listing_index.h): reading listings of directories
// not listed in this mount from it, keeping listings from the bucket in it, dropping what
// this mount changes, and listing stale directories again in the background.
#include <algorithm>

#include "common/log.h"
#include "meta/listing_index.h"
#include "meta/metadata.h"

namespace warmfs {
namespace {
// Background listings at once: enough to revalidate a tree walked from the index about as
// fast as `ls -lR` walked it, without crowding the mount's own requests.
constexpr size_t kRefreshThreads = 4;
}  // namespace

Metadata::~Metadata() {
  stopping_ = true;
  if (refresher_) refresher_->shutdown();
}

void Metadata::set_listing_index(ListingIndex* index) {
  index_ = index;
  if (index_ && !refresher_) {
    refresher_ = std::make_unique<ThreadPool>(kRefreshThreads, "warmfs-relist");
  }
}

void Metadata::install_listing_locked(const std::string& dir_path,
                                      const std::shared_ptr<DirListing>& listing) {
  // Files created here and not uploaded yet belong in the listing too.
  for (const auto& [ino, _] : local_inos_) {
    const Node* node = nodes_.find(ino);
    if (node == nullptr) continue;
    const Node& n = *node;
    if (dir_name(path_locked(n)) != dir_path) continue;
    DirEntry e{n.name, false, n.size, n.mtime_sec, ""};
    auto it = std::lower_bound(listing->entries.begin(), listing->entries.end(), e.name,
                               [](const DirEntry& a, const Name& b) { return a.name < b; });
    if (it != listing->entries.end() && it->name == e.name)
      *it = std::move(e);
    else
      listing->entries.insert(it, std::move(e));
  }
  // Keep the cache from growing without bound: drop stale listings now and then.
  // Passes come when the cache has doubled from what the last one kept: a walk of more fresh
  // directories than the bound does not pass over all of them at each one.
  if (listings_.size() > std::max(options_.max_listings, listings_sweep_at_)) {
    ++cache_sweeps_;
    for (auto it = listings_.begin(); it != listings_.end();) {
      it = fresh(it->second.listing->listed_at) ? std::next(it) : listings_.erase(it);
    }
    listings_sweep_at_ = 2 * listings_.size();
  }
  listings_[dir_path] = CachedListing{listing};
}

DirListingPtr Metadata::listing_from_index(const std::string& dir_path) {
  auto stored = index_->get(dir_path);
  if (!stored) return nullptr;
  auto listing = std::make_shared<DirListing>();
  listing->entries = std::move(stored->entries);
  for (DirEntry& e : listing->entries) {
    if (e.is_dir) e.mtime_sec = options_.dir_mtime_sec;
  }
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_.wall_now().time_since_epoch())
          .count();
  const auto age = std::chrono::milliseconds(std::max<int64_t>(now_ms - stored->listed_at_ms, 0));
  const auto now = clock_.now();
  const bool stale = age >= options_.ttl;
  if (stale) {
    listing->listed_at = now;  // served for a TTL, while it is listed again
    listing->said_at = now - age;
  } else {
    listing->listed_at = now - age;
  }
  {
    std::lock_guard lock(mu_);
    if (auto it = listings_.find(dir_path); it != listings_.end()) {
      return it->second.listing;  // listed meanwhile
    }
    ++listing_index_hits_;
    install_listing_locked(dir_path, listing);
  }
  if (stale) refresh_in_background(dir_path);
  return listing;
}

void Metadata::index_listing_locked(const std::string& dir_path, uint64_t edits,
                                    const std::string& encoded) {
  if (edits != index_edits_) return;  // a change here since the LIST began: it may lack it
  index_->put_encoded(dir_path, encoded);
}

void Metadata::unindex_locked(const std::string& dir_path, bool tree) {
  if (!index_) return;
  ++index_edits_;
  if (tree)
    index_->erase_tree(dir_path);
  else
    index_->erase(dir_path);
}

void Metadata::refresh_in_background(const std::string& dir_path) {
  {
    std::lock_guard lock(mu_);
    if (!refreshing_.insert(dir_path).second) return;
    ++listing_index_refreshes_;
  }
  const bool queued = refresher_->submit([this, dir_path] {
    if (!stopping_) {
      auto listed = fetch_listing(dir_path);
      if (!listed.is_ok()) {
        log::info("listing {:?} again: {}", dir_key(dir_path), listed.status().message());
      }
    }
    std::lock_guard lock(mu_);
    refreshing_.erase(dir_path);
  });
  if (!queued) {
    std::lock_guard lock(mu_);
    refreshing_.erase(dir_path);
  }
}

}  // namespace warmfs
