#include "meta/etag.h"

namespace warmfs {
namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr uint32_t kMaxParts = (1u << 24) - 1;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The 16 bytes of 32 lowercase hex digits; false if they are not that.
bool parse_md5(std::string_view hex, unsigned char* out) {
  for (size_t i = 0; i < 16; ++i) {
    const int hi = hex_value(hex[2 * i]);
    const int lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return true;
}

// N of "-N": decimal, 1..kMaxParts, no leading zero (so it prints back the same).
bool parse_parts(std::string_view s, uint32_t* n) {
  if (s.empty() || s.size() > 8 || s.front() == '0') return false;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  if (v > kMaxParts) return false;
  *n = v;
  return true;
}

}  // namespace

Etag::Etag(std::string_view etag) {
  if (etag.empty()) return;
  uint32_t parts = 0;
  if (etag.size() >= 32 && parse_md5(etag, bytes_)) {
    if (etag.size() == 32) {
      kind_ = kMd5;
      return;
    }
    if (etag[32] == '-' && parse_parts(etag.substr(33), &parts)) {
      kind_ = kMd5Parts;
      parts_[0] = static_cast<unsigned char>(parts);
      parts_[1] = static_cast<unsigned char>(parts >> 8);
      parts_[2] = static_cast<unsigned char>(parts >> 16);
      return;
    }
  }
  std::memset(bytes_, 0, sizeof bytes_);
  const auto len = static_cast<uint32_t>(etag.size());
  char* p = new char[sizeof len + len];
  std::memcpy(p, &len, sizeof len);
  std::memcpy(p + sizeof len, etag.data(), len);
  std::memcpy(bytes_, &p, sizeof p);
  kind_ = kHeap;
}

Etag Etag::from_md5(const unsigned char* digest) {
  Etag e;
  std::memcpy(e.bytes_, digest, sizeof e.bytes_);
  e.kind_ = kMd5;
  return e;
}

std::string_view Etag::heap_view() const {
  const char* p = heap();
  uint32_t len = 0;
  std::memcpy(&len, p, sizeof len);
  return std::string_view(p + sizeof len, len);
}

Etag::Etag(const Etag& other) {
  if (other.kind_ == kHeap) {
    *this = Etag(other.heap_view());
  } else {
    std::memcpy(bytes_, other.bytes_, sizeof bytes_);
    kind_ = other.kind_;
    std::memcpy(parts_, other.parts_, sizeof parts_);
  }
}

Etag::Etag(Etag&& other) noexcept {
  std::memcpy(bytes_, other.bytes_, sizeof bytes_);
  kind_ = other.kind_;
  std::memcpy(parts_, other.parts_, sizeof parts_);
  other.kind_ = kEmpty;  // the heap copy, if any, is ours now
}

Etag& Etag::operator=(const Etag& other) {
  if (this != &other) *this = Etag(other);
  return *this;
}

Etag& Etag::operator=(Etag&& other) noexcept {
  if (this != &other) {
    release();
    std::memcpy(bytes_, other.bytes_, sizeof bytes_);
    kind_ = other.kind_;
    std::memcpy(parts_, other.parts_, sizeof parts_);
    other.kind_ = kEmpty;
  }
  return *this;
}

Etag::~Etag() { release(); }

void Etag::release() {
  if (kind_ == kHeap) delete[] heap();
  kind_ = kEmpty;
}

std::string Etag::str() const {
  switch (kind_) {
    case kEmpty:
      return {};
    case kHeap:
      return std::string(heap_view());
    case kMd5:
    case kMd5Parts:
      break;
  }
  std::string s;
  s.reserve(kind_ == kMd5 ? 32 : 41);
  for (unsigned char b : bytes_) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 0xf]);
  }
  if (kind_ == kMd5Parts) {
    const uint32_t n = parts_[0] | uint32_t{parts_[1]} << 8 | uint32_t{parts_[2]} << 16;
    s.push_back('-');
    s.append(std::to_string(n));
  }
  return s;
}

bool operator==(const Etag& a, const Etag& b) {
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case Etag::kEmpty:
      return true;
    case Etag::kHeap:
      return a.heap_view() == b.heap_view();
    case Etag::kMd5:
      return std::memcmp(a.bytes_, b.bytes_, sizeof a.bytes_) == 0;
    case Etag::kMd5Parts:
      break;
  }
  return std::memcmp(a.bytes_, b.bytes_, sizeof a.bytes_) == 0 &&
         std::memcmp(a.parts_, b.parts_, sizeof a.parts_) == 0;
}

}  // namespace warmfs
