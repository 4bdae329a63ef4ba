#include "snapshot/manifest.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>

#include "common/hex.h"

namespace warmfs {
namespace {

constexpr char kMagic[8] = {'W', 'F', 'S', 'N', 'A', 'P', 'S', 'H'};
constexpr uint32_t kFlagVersions = 1;
constexpr uint32_t kFlagLocations = 2;  // format 2
// Entries per block: big enough for zstd to find the repeats across keys, small enough that a
// block's raw bytes (a few MiB) stay in cache while they are parsed.
constexpr size_t kBlockEntries = 65536;
constexpr int kZstdLevel = 3;  // zstd's default: ~300 MB/s, most of the ratio of higher levels

// ETag kinds in the in-memory and on-disk encoding (one byte, then the bytes):
constexpr uint8_t kEtagRaw = 0;      // a length byte, then the ETag as is
constexpr uint8_t kEtagMd5 = 1;      // 16 bytes: an ETag of 32 lowercase hex digits
constexpr uint8_t kEtagMd5Dash = 2;  // 16 bytes, a length byte, the rest ("-N" of a multipart)

// Lower case only: the ETag decoded from the 16 bytes is written in lower case.
bool lower_hex32(std::string_view s) {
  if (s.size() < 32) return false;
  for (size_t i = 0; i < 32; ++i)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}

void put_etag(std::string& out, std::string_view etag) {
  if (lower_hex32(etag) && (etag.size() == 32 || etag[32] == '-')) {
    out.push_back(static_cast<char>(etag.size() == 32 ? kEtagMd5 : kEtagMd5Dash));
    for (size_t i = 0; i < 32; i += 2)
      out.push_back(
          static_cast<char>(hex_digit_value(etag[i]) << 4 | hex_digit_value(etag[i + 1])));
    if (etag.size() > 32) {
      out.push_back(static_cast<char>(etag.size() - 32));
      out.append(etag.substr(32));
    }
    return;
  }
  out.push_back(static_cast<char>(kEtagRaw));
  out.push_back(static_cast<char>(etag.size()));
  out.append(etag);
}

// Decodes the ETag at *pos of data, advancing *pos; false if it runs past the end.
bool get_etag(std::string_view data, size_t* pos, std::string* etag) {
  if (*pos >= data.size()) return false;
  const uint8_t kind = static_cast<uint8_t>(data[(*pos)++]);
  if (kind == kEtagRaw) {
    if (*pos >= data.size()) return false;
    const size_t n = static_cast<uint8_t>(data[(*pos)++]);
    if (data.size() - *pos < n) return false;
    if (etag) etag->assign(data.substr(*pos, n));
    *pos += n;
    return true;
  }
  if (kind != kEtagMd5 && kind != kEtagMd5Dash) return false;
  if (data.size() - *pos < 16) return false;
  if (etag) {
    etag->clear();
    for (size_t i = 0; i < 16; ++i) append_hex_byte(*etag, static_cast<uint8_t>(data[*pos + i]));
  }
  *pos += 16;
  if (kind == kEtagMd5Dash) {
    if (*pos >= data.size()) return false;
    const size_t n = static_cast<uint8_t>(data[(*pos)++]);
    if (data.size() - *pos < n) return false;
    if (etag) etag->append(data.substr(*pos, n));
    *pos += n;
  }
  return true;
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

bool get_varint(std::string_view data, size_t* pos, uint64_t* v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= data.size()) return false;
    const uint8_t b = static_cast<uint8_t>(data[(*pos)++]);
    r |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return true;
    }
  }
  return false;
}

uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

template <typename T>
void put_fixed(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, arm64)
  out.append(b, sizeof(T));
}

template <typename T>
bool get_fixed(std::string_view data, size_t* pos, T* v) {
  if (data.size() - *pos < sizeof(T)) return false;
  std::memcpy(v, data.data() + *pos, sizeof(T));
  *pos += sizeof(T);
  return true;
}

Status corrupt(std::string_view why) {
  return Status(Errc::kCorrupt, fmt::format("not a valid warmfs snapshot: {}", why));
}

}  // namespace

std::string Manifest::etag(size_t i) const {
  std::string out;
  size_t pos = entries_[i].etag_off;
  get_etag(etags_, &pos, &out);
  return out;
}

std::string_view Manifest::encoded_etag(size_t i) const {
  size_t pos = entries_[i].etag_off;
  get_etag(etags_, &pos, nullptr);
  return std::string_view(etags_).substr(entries_[i].etag_off, pos - entries_[i].etag_off);
}

std::string Manifest::version_id(size_t i) const {
  if (!has_versions_) return {};
  const size_t off = version_off_[i];
  const size_t n = static_cast<uint8_t>(versions_[off]);
  return versions_.substr(off + 1, n);
}

ManifestEntryView Manifest::entry(size_t i) const {
  return ManifestEntryView{key(i),  object_size(i), mtime_sec(i),
                           etag(i), version_id(i),  location(i)};
}

size_t Manifest::lower_bound(std::string_view k) const {
  size_t lo = 0, hi = entries_.size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (key(mid) < k)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

std::optional<size_t> Manifest::find(std::string_view k) const {
  const size_t i = lower_bound(k);
  if (i < entries_.size() && key(i) == k) return i;
  return std::nullopt;
}

std::string_view Manifest::location(size_t i) const {
  if (!has_locations_) return {};
  size_t p = location_off_[i];
  uint64_t n = 0;
  get_varint(locations_, &p, &n);
  return std::string_view(locations_).substr(p, n);
}

size_t Manifest::memory_bytes() const {
  return names_.capacity() + etags_.capacity() + versions_.capacity() +
         version_off_.capacity() * sizeof(uint32_t) + locations_.capacity() +
         location_off_.capacity() * sizeof(uint32_t) + entries_.capacity() * sizeof(Entry);
}

void Manifest::append_tail(std::string_view version_id, std::string_view location) {
  if (has_versions_) {
    version_off_.push_back(static_cast<uint32_t>(versions_.size()));
    versions_.push_back(static_cast<char>(version_id.size()));
    versions_.append(version_id);
  }
  if (has_locations_) {
    location_off_.push_back(static_cast<uint32_t>(locations_.size()));
    put_varint(locations_, location.size());
    locations_.append(location);
  }
}

void Manifest::append(std::string_view k, uint64_t size, int64_t mtime, std::string_view etag,
                      std::string_view version_id, std::string_view location) {
  Entry e;
  e.name_off = names_.size();
  e.name_len = static_cast<uint32_t>(k.size());
  e.etag_off = static_cast<uint32_t>(etags_.size());
  e.size = size;
  e.mtime_sec = mtime;
  names_.append(k);
  put_etag(etags_, etag);
  append_tail(version_id, location);
  entries_.push_back(e);
}

void Manifest::append_encoded(std::string_view k, uint64_t size, int64_t mtime,
                              std::string_view encoded_etag, std::string_view version_id,
                              std::string_view location) {
  Entry e;
  e.name_off = names_.size();
  e.name_len = static_cast<uint32_t>(k.size());
  e.etag_off = static_cast<uint32_t>(etags_.size());
  e.size = size;
  e.mtime_sec = mtime;
  names_.append(k);
  etags_.append(encoded_etag);
  append_tail(version_id, location);
  entries_.push_back(e);
}

ManifestBuilder::ManifestBuilder(std::string bucket, std::string prefix, bool with_versions,
                                 int64_t created_sec, bool with_locations) {
  m_.bucket_ = std::move(bucket);
  m_.prefix_ = std::move(prefix);
  m_.has_versions_ = with_versions;
  m_.has_locations_ = with_locations;
  m_.created_sec_ = created_sec;
}

Status ManifestBuilder::add(std::string_view key, uint64_t size, int64_t mtime_sec,
                            std::string_view etag, std::string_view version_id,
                            std::string_view location) {
  if (!location.empty() && !m_.has_locations_) {
    return Status(Errc::kInvalidArgument, "a location in a manifest built without them");
  }
  if (etag.size() > 255) return Status(Errc::kInvalidArgument, "ETag over 255 bytes");
  if (version_id.size() > 255) return Status(Errc::kInvalidArgument, "version id over 255 bytes");
  if (key.size() > UINT32_MAX) return Status(Errc::kInvalidArgument, "key over 4 GiB");
  if (m_.etags_.size() > UINT32_MAX - 300 || m_.versions_.size() > UINT32_MAX - 300 ||
      m_.locations_.size() > UINT32_MAX - location.size() - 16) {
    return Status(Errc::kInvalidArgument, "too many entries for one snapshot");
  }
  m_.append(key, size, mtime_sec, etag, version_id, location);
  return Status::ok();
}

Manifest ManifestBuilder::finish() && {
  Manifest& m = m_;
  const size_t n = m.entries_.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  auto key_of = [&m](uint32_t i) { return m.key(i); };
  bool sorted = true;
  for (size_t i = 1; i < n && sorted; ++i) sorted = key_of(i - 1) < key_of(i);
  if (!sorted) {
    // Stable: of equal keys the one added last ends up last, and is the one kept.
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return key_of(a) < key_of(b); });
    std::vector<uint32_t> kept;
    kept.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (i + 1 < n && key_of(order[i]) == key_of(order[i + 1])) continue;
      kept.push_back(order[i]);
    }
    std::vector<Manifest::Entry> entries;
    entries.reserve(kept.size());
    std::vector<uint32_t> voff, loff;
    if (m.has_versions_) voff.reserve(kept.size());
    if (m.has_locations_) loff.reserve(kept.size());
    for (uint32_t i : kept) {
      entries.push_back(m.entries_[i]);
      if (m.has_versions_) voff.push_back(m.version_off_[i]);
      if (m.has_locations_) loff.push_back(m.location_off_[i]);
    }
    m.entries_ = std::move(entries);
    m.version_off_ = std::move(voff);
    m.location_off_ = std::move(loff);
  }
  return std::move(m_);
}

// Header: magic, u32 format version, u32 flags, u64 entries, i64 created, u64 key bytes,
// u64 ETag bytes, u16 + bucket, u16 + prefix, u32 blocks. Each block: u32 raw size, u32
// compressed size, u32 entries, then one zstd frame (with its content checksum).
std::string encode_manifest(const Manifest& m) {
  std::string out;
  out.append(kMagic, sizeof(kMagic));
  put_fixed<uint32_t>(out, m.has_locations() ? 2 : 1);
  put_fixed<uint32_t>(
      out, (m.has_versions() ? kFlagVersions : 0) | (m.has_locations() ? kFlagLocations : 0));
  put_fixed<uint64_t>(out, m.size());
  put_fixed<int64_t>(out, m.created_sec());
  uint64_t key_bytes = 0;
  for (size_t i = 0; i < m.size(); ++i) key_bytes += m.key(i).size();
  put_fixed<uint64_t>(out, key_bytes);
  put_fixed<uint64_t>(out, m.etag_bytes());
  put_fixed<uint16_t>(out, static_cast<uint16_t>(m.bucket().size()));
  out.append(m.bucket());
  put_fixed<uint16_t>(out, static_cast<uint16_t>(m.prefix().size()));
  out.append(m.prefix());
  const size_t blocks = (m.size() + kBlockEntries - 1) / kBlockEntries;
  put_fixed<uint32_t>(out, static_cast<uint32_t>(blocks));

  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, kZstdLevel);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  std::string raw;
  std::string frame;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t first = b * kBlockEntries;
    const size_t last = std::min(m.size(), first + kBlockEntries);
    raw.clear();
    std::string_view prev;
    int64_t prev_mtime = 0;
    for (size_t i = first; i < last; ++i) {
      const std::string_view k = m.key(i);
      size_t shared = 0;
      const size_t limit = std::min(prev.size(), k.size());
      while (shared < limit && prev[shared] == k[shared]) ++shared;
      put_varint(raw, shared);
      put_varint(raw, k.size() - shared);
      raw.append(k.substr(shared));
      put_varint(raw, m.object_size(i));
      put_varint(raw, zigzag(m.mtime_sec(i) - prev_mtime));
      prev_mtime = m.mtime_sec(i);
      raw.append(m.encoded_etag(i));
      if (m.has_versions()) {
        const std::string v = m.version_id(i);
        raw.push_back(static_cast<char>(v.size()));
        raw.append(v);
      }
      if (m.has_locations()) {
        const std::string_view l = m.location(i);
        put_varint(raw, l.size());
        raw.append(l);
      }
      prev = k;
    }
    frame.resize(ZSTD_compressBound(raw.size()));
    const size_t n = ZSTD_compress2(cctx, frame.data(), frame.size(), raw.data(), raw.size());
    // Compressing into a buffer of ZSTD_compressBound cannot fail.
    put_fixed<uint32_t>(out, static_cast<uint32_t>(raw.size()));
    put_fixed<uint32_t>(out, static_cast<uint32_t>(n));
    put_fixed<uint32_t>(out, static_cast<uint32_t>(last - first));
    out.append(frame.data(), n);
  }
  ZSTD_freeCCtx(cctx);
  return out;
}

Result<Manifest> decode_manifest(std::string_view bytes) {
  size_t pos = 0;
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return corrupt("no snapshot header (bad magic)");
  }
  pos = sizeof(kMagic);
  uint32_t version = 0, flags = 0, blocks = 0;
  uint64_t count = 0, key_bytes = 0, etag_bytes = 0;
  int64_t created = 0;
  uint16_t bucket_len = 0, prefix_len = 0;
  if (!get_fixed(bytes, &pos, &version) || !get_fixed(bytes, &pos, &flags)) {
    return corrupt("short header");
  }
  if (version == 0 || version > kManifestFormatVersion) {
    return Status(Errc::kNotSupported,
                  fmt::format("snapshot format {} is not known to this warmfs (it reads format {})",
                              version, kManifestFormatVersion));
  }
  if (!get_fixed(bytes, &pos, &count) || !get_fixed(bytes, &pos, &created) ||
      !get_fixed(bytes, &pos, &key_bytes) || !get_fixed(bytes, &pos, &etag_bytes) ||
      !get_fixed(bytes, &pos, &bucket_len) || bytes.size() - pos < bucket_len) {
    return corrupt("short header");
  }
  Manifest m;
  m.bucket_.assign(bytes.substr(pos, bucket_len));
  pos += bucket_len;
  if (!get_fixed(bytes, &pos, &prefix_len) || bytes.size() - pos < prefix_len) {
    return corrupt("short header");
  }
  m.prefix_.assign(bytes.substr(pos, prefix_len));
  pos += prefix_len;
  if (!get_fixed(bytes, &pos, &blocks)) return corrupt("short header");
  m.has_versions_ = (flags & kFlagVersions) != 0;
  m.has_locations_ = (flags & kFlagLocations) != 0;
  if (m.has_locations_ && version < 2) return corrupt("locations in a format 1 snapshot");
  m.created_sec_ = created;
  // The sizes in the header only reserve memory: capped by what the file can expand to
  // (zstd expands at most ~1000x), so a damaged header cannot ask for terabytes.
  const uint64_t cap = 1024 * static_cast<uint64_t>(bytes.size());
  m.entries_.reserve(std::min(count, cap / 8));
  m.names_.reserve(std::min(key_bytes, cap));
  m.etags_.reserve(std::min(etag_bytes, cap));
  if (m.has_versions_) m.version_off_.reserve(std::min(count, cap / 8));

  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  std::string raw;
  std::string prev;
  Status failed = Status::ok();
  for (uint32_t b = 0; b < blocks && failed.is_ok(); ++b) {
    uint32_t raw_size = 0, frame_size = 0, entries = 0;
    if (!get_fixed(bytes, &pos, &raw_size) || !get_fixed(bytes, &pos, &frame_size) ||
        !get_fixed(bytes, &pos, &entries) || bytes.size() - pos < frame_size) {
      failed = corrupt(fmt::format("block {} of {} is cut short", b, blocks));
      break;
    }
    raw.resize(raw_size);
    const size_t n =
        ZSTD_decompressDCtx(dctx, raw.data(), raw.size(), bytes.data() + pos, frame_size);
    pos += frame_size;
    if (ZSTD_isError(n) || n != raw_size) {
      failed = corrupt(
          fmt::format("block {}: {}", b, ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size"));
      break;
    }
    std::string_view data(raw);
    size_t p = 0;
    int64_t mtime = 0;
    prev.clear();
    for (uint32_t e = 0; e < entries; ++e) {
      uint64_t shared = 0, suffix = 0, size = 0, dm = 0;
      if (!get_varint(data, &p, &shared) || !get_varint(data, &p, &suffix) ||
          shared > prev.size() || data.size() - p < suffix) {
        failed = corrupt(fmt::format("block {}: bad key", b));
        break;
      }
      prev.resize(shared);
      prev.append(data.substr(p, suffix));
      p += suffix;
      const bool numbers = get_varint(data, &p, &size) && get_varint(data, &p, &dm);
      const size_t etag_at = p;
      if (!numbers || !get_etag(data, &p, nullptr)) {
        failed = corrupt(fmt::format("block {}: bad entry", b));
        break;
      }
      const std::string_view encoded_etag = data.substr(etag_at, p - etag_at);
      mtime += unzigzag(dm);
      std::string_view vid;
      if (m.has_versions_) {
        if (p >= data.size() || data.size() - p - 1 < static_cast<uint8_t>(data[p])) {
          failed = corrupt(fmt::format("block {}: bad version id", b));
          break;
        }
        vid = data.substr(p + 1, static_cast<uint8_t>(data[p]));
        p += 1 + vid.size();
      }
      std::string_view loc;
      if (m.has_locations_) {
        uint64_t n = 0;
        if (!get_varint(data, &p, &n) || data.size() - p < n) {
          failed = corrupt(fmt::format("block {}: bad location", b));
          break;
        }
        loc = data.substr(p, n);
        p += n;
      }
      if (!m.entries_.empty() && !(m.key(m.entries_.size() - 1) < std::string_view(prev))) {
        failed = corrupt(fmt::format("keys out of order at '{}'", prev));
        break;
      }
      // The ETag's encoding in a block is its encoding in memory: copied as is.
      m.append_encoded(prev, size, mtime, encoded_etag, vid, loc);
    }
    if (failed.is_ok() && p != data.size())
      failed = corrupt(fmt::format("block {}: trailing bytes", b));
  }
  ZSTD_freeDCtx(dctx);
  if (!failed.is_ok()) return failed;
  if (m.entries_.size() != count) {
    return corrupt(fmt::format("{} entries, the header says {}", m.entries_.size(), count));
  }
  if (pos != bytes.size()) return corrupt("trailing bytes after the last block");
  return m;
}

Status write_manifest_file(const Manifest& m, const std::string& path) {
  const std::string bytes = encode_manifest(m);
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status(Errc::kIo, fmt::format("{}: {}", tmp, std::strerror(errno)));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Status(Errc::kIo, fmt::format("{}: {}", tmp, std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status(Errc::kIo, fmt::format("{}: {}", tmp, std::strerror(err)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Status(Errc::kIo, fmt::format("{}: {}", path, std::strerror(err)));
  }
  return Status::ok();
}

Result<Manifest> read_manifest_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(Errc::kNotFound, fmt::format("{}: {}", path, std::strerror(errno)));
  struct stat st {};
  std::string bytes;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status(Errc::kIo, fmt::format("{}: {}", path, std::strerror(err)));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  auto m = decode_manifest(bytes);
  if (!m.is_ok()) return Status(m.code(), fmt::format("{}: {}", path, m.status().message()));
  return m;
}

}  // namespace warmfs
