#include "meta/listing_index.h"

#include "common/log.h"

namespace warmfs {
namespace {

constexpr uint8_t kListingVersion1 = 1;
constexpr uint8_t kFlagDir = 1;
constexpr uint8_t kFlagMd5Etag = 2;  // the ETag is "<32 lowercase hex>": stored as 16 bytes
// The ETag is <32 lowercase hex> without quotes (as the object store gives it): 16 bytes.
constexpr uint8_t kFlagBareMd5Etag = 4;
constexpr uint8_t kKnownFlags = kFlagDir | kFlagMd5Etag | kFlagBareMd5Etag;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

bool get_varint(std::string_view& in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    const auto b = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    result |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool is_md5_etag(std::string_view etag) {
  if (etag.size() != 34 || etag.front() != '"' || etag.back() != '"') return false;
  for (char c : etag.substr(1, 32)) {
    if (hex_value(c) < 0) return false;
  }
  return true;
}

bool take(std::string_view& in, size_t n, std::string_view* out) {
  if (in.size() < n) return false;
  *out = in.substr(0, n);
  in.remove_prefix(n);
  return true;
}

}  // namespace

std::string encode_listing(const std::vector<DirEntry>& entries, int64_t listed_at_ms) {
  std::string out;
  out.reserve(16 + entries.size() * 32);
  out.push_back(static_cast<char>(kListingVersion1));
  put_varint(out, static_cast<uint64_t>(std::max<int64_t>(listed_at_ms, 0)));
  put_varint(out, entries.size());
  std::string_view prev;
  for (const DirEntry& e : entries) {
    size_t shared = 0;
    const std::string_view name = e.name;
    while (shared < prev.size() && shared < name.size() && prev[shared] == name[shared]) {
      ++shared;
    }
    put_varint(out, shared);
    put_varint(out, name.size() - shared);
    out.append(name.substr(shared));
    prev = name;
    if (e.is_dir) {
      out.push_back(static_cast<char>(kFlagDir));
      continue;
    }
    if (const unsigned char* digest = e.etag.md5()) {
      out.push_back(static_cast<char>(kFlagBareMd5Etag));
      put_varint(out, e.size);
      put_varint(out, zigzag(e.mtime_sec));
      out.append(reinterpret_cast<const char*>(digest), 16);
      continue;
    }
    const std::string etag = e.etag.str();
    const bool md5 = is_md5_etag(etag);
    out.push_back(static_cast<char>(md5 ? kFlagMd5Etag : 0));
    put_varint(out, e.size);
    put_varint(out, zigzag(e.mtime_sec));
    if (md5) {
      for (size_t i = 1; i < 33; i += 2) {
        out.push_back(static_cast<char>(hex_value(etag[i]) << 4 | hex_value(etag[i + 1])));
      }
    } else {
      put_varint(out, etag.size());
      out.append(etag);
    }
  }
  return out;
}

std::optional<IndexedListing> decode_listing(std::string_view in) {
  static constexpr char kHex[] = "0123456789abcdef";
  if (in.empty() || static_cast<uint8_t>(in.front()) != kListingVersion1) return std::nullopt;
  in.remove_prefix(1);
  IndexedListing l;
  uint64_t listed_at = 0;
  uint64_t count = 0;
  if (!get_varint(in, &listed_at) || !get_varint(in, &count)) return std::nullopt;
  if (listed_at > uint64_t{INT64_MAX} || count > in.size()) return std::nullopt;  // >= 2 bytes each
  l.listed_at_ms = static_cast<int64_t>(listed_at);
  l.entries.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t shared = 0;
    uint64_t suffix_len = 0;
    std::string_view suffix;
    if (!get_varint(in, &shared) || !get_varint(in, &suffix_len)) return std::nullopt;
    const std::string_view prev = i == 0 ? std::string_view() : l.entries.back().name.view();
    if (shared > prev.size() || suffix_len > kMaxNameBytes || !take(in, suffix_len, &suffix)) {
      return std::nullopt;
    }
    std::string name;
    name.reserve(shared + suffix_len);
    name.append(prev.substr(0, shared)).append(suffix);
    if (!is_valid_name(name) || (i > 0 && !(prev < name))) return std::nullopt;
    DirEntry e;
    e.name = name;
    std::string_view flags_byte;
    if (!take(in, 1, &flags_byte)) return std::nullopt;
    const auto flags = static_cast<uint8_t>(flags_byte.front());
    // At most one of the flags: a directory has no ETag, an ETag one form.
    if ((flags & ~kKnownFlags) != 0 || (flags & (flags - 1)) != 0) return std::nullopt;
    e.is_dir = (flags & kFlagDir) != 0;
    if (!e.is_dir) {
      uint64_t mtime = 0;
      if (!get_varint(in, &e.size) || !get_varint(in, &mtime)) return std::nullopt;
      e.mtime_sec = unzigzag(mtime);
      std::string_view etag;
      if (flags & kFlagBareMd5Etag) {
        if (!take(in, 16, &etag)) return std::nullopt;
        e.etag = Etag::from_md5(reinterpret_cast<const unsigned char*>(etag.data()));
      } else if (flags & kFlagMd5Etag) {
        if (!take(in, 16, &etag)) return std::nullopt;
        std::string quoted;
        quoted.reserve(34);
        quoted.push_back('"');
        for (char c : etag) {
          quoted.push_back(kHex[static_cast<uint8_t>(c) >> 4]);
          quoted.push_back(kHex[static_cast<uint8_t>(c) & 0xf]);
        }
        quoted.push_back('"');
        e.etag = quoted;
      } else {
        uint64_t etag_len = 0;
        if (!get_varint(in, &etag_len) || !take(in, etag_len, &etag)) return std::nullopt;
        e.etag = etag;
      }
    }
    l.entries.push_back(std::move(e));
  }
  if (!in.empty()) return std::nullopt;
  return l;
}

ListingIndex::ListingIndex(KvStore& store, std::string_view endpoint, std::string_view bucket,
                           std::string_view prefix)
    : store_(store), key_prefix_([&] {
        std::string k = "L";
        for (std::string_view part : {endpoint, bucket, prefix}) {
          put_varint(k, part.size());
          k.append(part);
        }
        return k;
      }()) {}

void ListingIndex::report(const Status& s) const {
  if (s.is_ok()) return;
  const uint64_t n = ++failures_;
  if ((n & (n - 1)) == 0) log::warn("listing index ({} failures): {}", n, s.message());
}

std::string ListingIndex::key(std::string_view dir_path) const {
  std::string k = key_prefix_;
  k.append(dir_path);
  return k;
}

std::optional<IndexedListing> ListingIndex::get(std::string_view dir_path) const {
  auto value = store_.get(key(dir_path));
  if (!value.is_ok()) {
    report(value.status());
    return std::nullopt;
  }
  if (!*value) return std::nullopt;
  auto listing = decode_listing(**value);
  if (!listing) {
    log::warn("listing index: dropping a malformed entry for directory {:?}",
              std::string(dir_path));
    report(store_.erase(key(dir_path)));
  }
  return listing;
}

void ListingIndex::put(std::string_view dir_path, const std::vector<DirEntry>& entries,
                       int64_t listed_at_ms) {
  put_encoded(dir_path, encode_listing(entries, listed_at_ms));
}

void ListingIndex::put_encoded(std::string_view dir_path, std::string_view value) {
  report(store_.put(key(dir_path), value));
}

void ListingIndex::erase(std::string_view dir_path) { report(store_.erase(key(dir_path))); }

void ListingIndex::erase_tree(std::string_view dir_path) {
  // The root's tree is the whole mount; below it, the directory and "dir/..." (not "dirx").
  Status s = dir_path.empty() ? store_.erase_prefix(key_prefix_) : store_.erase(key(dir_path));
  if (s.is_ok() && !dir_path.empty()) s = store_.erase_prefix(key(std::string(dir_path) + "/"));
  report(s);
}

Status ListingIndex::scan(
    const std::function<bool(std::string_view dir_path, const IndexedListing&)>& visit) const {
  return store_.scan(key_prefix_, [&](std::string_view k, std::string_view v) {
    auto listing = decode_listing(v);
    if (!listing) return true;
    return visit(k.substr(key_prefix_.size()), *listing);
  });
}

}  // namespace warmfs
