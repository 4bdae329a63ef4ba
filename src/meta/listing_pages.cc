#include "meta/listing_pages.h"

#include <algorithm>

#include "common/log.h"
#include "common/reserved_names.h"

namespace warmfs {

ListingPages::ListingPages(std::string prefix, bool root, int64_t dir_mtime_sec)
    : prefix_(std::move(prefix)), root_(root), dir_mtime_sec_(dir_mtime_sec) {}

ListRequest ListingPages::next_request() const {
  ListRequest req;
  req.prefix = prefix_;
  req.delimiter = "/";
  req.continuation_token = token_;
  return req;
}

void ListingPages::add_entry(DirEntry e) {
  auto it = by_name_.find(e.name);
  if (it == by_name_.end()) {
    entries_.push_back(std::move(e));
    const DirEntry& added = entries_.back();
    by_name_.emplace(added.name, entries_.size() - 1);
    return;
  }
  // A file "x" listed before the prefix "x/": the directory wins. The entry is not settled
  // yet (the pages had not reached "x/"), so no reader holds it. Its name stays in place:
  // by_name_ points into it.
  DirEntry& had = entries_[it->second];
  if (e.is_dir && !had.is_dir) {
    had.is_dir = true;
    had.size = 0;
    had.mtime_sec = e.mtime_sec;
    had.etag = Etag();
  }
}

Status ListingPages::add(ListPage page) {
  if (complete_) return Status(Errc::kInternal, "listing already complete");
  auto skip = [&](std::string_view what, const std::string& key, std::string_view rest) {
    ++skipped_;
    log::info("skipping {} {:?}: {:?} is not a valid {} name", what, key, std::string(rest),
              what == "key" ? "file" : "directory");
  };
  // Keys and prefixes come sorted each on their own: merged, the entries follow key order.
  size_t o = 0, p = 0;
  while (o < page.objects.size() || p < page.common_prefixes.size()) {
    const bool take_object =
        p == page.common_prefixes.size() ||
        (o < page.objects.size() && page.objects[o].key < page.common_prefixes[p]);
    if (take_object) {
      ObjectInfo& obj = page.objects[o++];
      std::string_view rest = std::string_view(obj.key).substr(prefix_.size());
      if (rest.empty()) continue;  // the directory's own "dir/" marker
      if (!is_valid_name(rest)) {
        skip("key", obj.key, rest);
        continue;
      }
      add_entry(DirEntry{std::string(rest), false, obj.size, obj.mtime_sec, obj.etag});
    } else {
      const std::string& cp = page.common_prefixes[p++];
      std::string_view rest = std::string_view(cp).substr(prefix_.size());
      if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
      if (root_ && rest == kReservedDirName) continue;  // warmfs's own objects
      if (!is_valid_name(rest)) {
        skip("prefix", cp, rest);
        continue;
      }
      add_entry(DirEntry{std::string(rest), true, 0, dir_mtime_sec_, ""});
    }
  }
  auto rel = [&](const std::string& key) {
    return std::string_view(key).substr(std::min(prefix_.size(), key.size()));
  };
  if (!page.objects.empty() && rel(page.objects.back().key) > std::string_view(last_)) {
    last_ = rel(page.objects.back().key);
  }
  if (!page.common_prefixes.empty() && rel(page.common_prefixes.back()) > std::string_view(last_)) {
    last_ = rel(page.common_prefixes.back());
  }
  if (page.truncated && page.next_token.empty()) {
    return Status(Errc::kCorrupt, "ListObjectsV2 truncated without a continuation token");
  }
  token_ = std::move(page.next_token);
  complete_ = !page.truncated;
  while (settled_ < entries_.size() && final(entries_[settled_])) ++settled_;
  return Status::ok();
}

bool ListingPages::reached(std::string_view name) const {
  // name + "/" <= last_, compared as the bucket sorts keys (bytes, unsigned).
  const std::string_view last(last_);
  const size_t n = std::min(name.size(), last.size());
  if (const int c = name.substr(0, n).compare(last.substr(0, n)); c != 0) return c < 0;
  if (last.size() <= name.size()) return false;  // last is name, or a prefix of it
  return static_cast<unsigned char>('/') <= static_cast<unsigned char>(last[name.size()]);
}

bool ListingPages::final(const DirEntry& e) const {
  return complete_ || e.is_dir || reached(e.name);
}

void ListingPages::drop_names() {
  by_name_ = {};
  names_dropped_ = true;
}

ListingPages::Answer ListingPages::find(std::string_view name, const DirEntry** out) const {
  if (names_dropped_) return Answer::kUnknown;
  if (auto it = by_name_.find(name); it != by_name_.end()) {
    const DirEntry& e = entries_[it->second];
    if (!final(e)) return Answer::kUnknown;
    *out = &e;
    return Answer::kFound;
  }
  // Both keys name could have, "name" and "name/...", sort before name + "/" ends.
  return complete_ || reached(name) ? Answer::kAbsent : Answer::kUnknown;
}

namespace {
void sort_by_name(std::vector<DirEntry>& v) {
  std::sort(v.begin(), v.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
}
}  // namespace

std::vector<DirEntry> ListingPages::sorted() const {
  std::vector<DirEntry> v(entries_.begin(), entries_.end());
  sort_by_name(v);
  return v;
}

std::vector<DirEntry> ListingPages::take_sorted() && {
  by_name_.clear();  // its views point into the names moved out
  std::vector<DirEntry> v(std::make_move_iterator(entries_.begin()),
                          std::make_move_iterator(entries_.end()));
  entries_.clear();
  sort_by_name(v);
  return v;
}

}  // namespace warmfs
