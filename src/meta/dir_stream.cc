// DirStream and OpenDir, and Metadata's side of them: open_dir(), and a stream's pages and
// its end.
#include "meta/dir_stream.h"

namespace warmfs {

DirStream::DirStream(Metadata& meta, std::string dir_path, uint64_t edits)
    : meta_(meta),
      dir_path_(std::move(dir_path)),
      edits_(edits),
      listed_at_(meta.clock_.now()),
      listed_at_wall_(meta.clock_.wall_now()),
      pages_(meta.dir_key(dir_path_), dir_path_.empty(), meta.options_.dir_mtime_sec) {}

Status DirStream::read_until(size_t i) {
  std::lock_guard fetch(fetch_mu_);
  while (true) {
    ListRequest req;
    {
      std::lock_guard lock(mu_);
      if (i < pages_.settled() || pages_.complete()) return Status::ok();
      req = pages_.next_request();
    }
    WARMFS_ASSIGN_OR_RETURN(ListPage page, meta_.store_.list(req));
    // Entries from `from` on are this page's; only this thread (holding fetch_mu_) changes
    // pages_, so it reads them without mu_ below.
    size_t from;
    {
      std::lock_guard lock(mu_);
      from = pages_.size();
      WARMFS_RETURN_IF_ERROR(pages_.add(std::move(page)));
    }
    if (meta_.options_.object_attrs && from < pages_.size()) {
      DirListing fresh;
      for (size_t k = from; k < pages_.size(); ++k) fresh.entries.push_back(pages_.at(k));
      meta_.fetch_attrs(dir_path_, fresh);
    }
    if (pages_.complete()) {
      auto whole = std::make_shared<DirListing>();
      whole->entries = pages_.sorted();
      whole->listed_at = listed_at_;
      DirListingPtr cached =
          meta_.install_listed(dir_path_, whole, edits_, listed_at_wall_, pages_.skipped(), this);
      std::lock_guard lock(mu_);
      listing_ = std::move(cached);
      pages_.drop_names();  // lookups go to the cached listing now
    }
  }
}

Result<const DirEntry*> DirStream::at(size_t i) {
  {
    std::lock_guard lock(mu_);
    if (i < pages_.settled()) return &pages_.at(i);
    if (pages_.complete()) return static_cast<const DirEntry*>(nullptr);
  }
  WARMFS_RETURN_IF_ERROR(read_until(i));
  std::lock_guard lock(mu_);
  if (i < pages_.settled()) return &pages_.at(i);
  return static_cast<const DirEntry*>(nullptr);
}

ListingPages::Answer DirStream::find(std::string_view name, DirEntry* out) const {
  std::lock_guard lock(mu_);
  const DirEntry* e = nullptr;
  const auto answer = pages_.find(name, &e);
  if (answer == ListingPages::Answer::kFound) *out = *e;
  return answer;
}

DirListingPtr DirStream::listing() const {
  std::lock_guard lock(mu_);
  return listing_;
}

Result<const DirEntry*> OpenDir::at(size_t i) const {
  if (stream_) return stream_->at(i);
  if (i < listing_->entries.size()) return &listing_->entries[i];
  return static_cast<const DirEntry*>(nullptr);
}

Result<std::vector<DirEntry>> OpenDir::read_all() const {
  std::vector<DirEntry> out;
  for (size_t i = 0;; ++i) {
    WARMFS_ASSIGN_OR_RETURN(const DirEntry* e, at(i));
    if (e == nullptr) return out;
    out.push_back(*e);
  }
}

bool OpenDir::streaming() const { return stream_ && stream_->listing() == nullptr; }

// ---- Metadata's side ------------------------------------------------------------------------

Result<OpenDirPtr> Metadata::open_dir(uint64_t dir_ino) {
  std::string path;
  DirListingPtr listing;
  std::shared_ptr<DirStream> stream;
  bool unlisted = false;
  bool local_children = false;
  uint64_t edits = 0;
  {
    std::lock_guard lock(mu_);
    WARMFS_ASSIGN_OR_RETURN(path, cached_listing_locked(dir_ino, &listing, &unlisted));
    if (!listing) {
      if (auto sit = streams_.find(path); sit != streams_.end()) stream = sit->second.lock();
    }
    local_children = has_local_children_locked(path);
    edits = index_edits_;
  }
  if (stream) return std::make_shared<const OpenDir>(std::move(stream));
  if (!listing && unlisted && index_) listing = listing_from_index(path);
  if (!listing && local_children) {
    // Files created here and not uploaded yet go into the listing in name order
    // (install_listing_locked): such a directory is listed whole.
    WARMFS_ASSIGN_OR_RETURN(listing, fetch_listing(path));
  }
  if (listing) {
    fetch_attrs(path, *listing);
    return std::make_shared<const OpenDir>(std::move(listing));
  }
  stream = std::make_shared<DirStream>(*this, path, edits);
  WARMFS_RETURN_IF_ERROR(stream->read_until(0));
  if (DirListingPtr whole = stream->listing()) {
    return std::make_shared<const OpenDir>(std::move(whole));  // one page held it all
  }
  {
    std::lock_guard lock(mu_);
    if (streams_.size() > 64) std::erase_if(streams_, [](auto& s) { return s.second.expired(); });
    streams_[path] = stream;
  }
  return std::make_shared<const OpenDir>(std::move(stream));
}

Metadata::StreamAnswer Metadata::stream_answer(const DirStream* stream, std::string_view name) {
  if (!stream) return {};
  StreamAnswer a;
  DirEntry e;
  switch (stream->find(name, &e)) {
    case ListingPages::Answer::kUnknown:
      return {};
    case ListingPages::Answer::kFound:
      a.entry = std::move(e);
      break;
    case ListingPages::Answer::kAbsent:
      break;
  }
  a.known = true;
  a.listed_at = stream->listed_at();
  return a;
}

}  // namespace warmfs
