// Etag: an object's ETag, byte for byte as the server sent it (quotes stripped), in 20 bytes.
//
// The namespace keeps one per file in its listings and nodes, so it is kept small: an MD5
// ETag (32 lowercase hex digits, what S3 gives a single-part upload) is held as its 16 bytes,
// a multipart one ("<32 hex>-N", N up to 16,777,215 without leading zeros) as those and N,
// in place. Any other form (other servers' ETags, upper case hex, longer digests) is held in
// a heap copy of its own. str() gives back exactly the bytes it was made from; two Etags are
// equal when those bytes are.
//
// A value type; not thread safe beyond that (const use from many threads is fine).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace warmfs {

class Etag {
 public:
  Etag() = default;
  // Implicit: an Etag stands where a string did (DirEntry{..., info.etag}, e.etag = s).
  Etag(std::string_view etag);  // NOLINT(google-explicit-constructor)
  Etag(const std::string& etag) : Etag(std::string_view(etag)) {}
  Etag(const char* etag) : Etag(std::string_view(etag)) {}
  // The MD5 ETag of these 16 digest bytes.
  static Etag from_md5(const unsigned char* digest);

  Etag(const Etag& other);
  Etag(Etag&& other) noexcept;
  Etag& operator=(const Etag& other);
  Etag& operator=(Etag&& other) noexcept;
  ~Etag();

  bool empty() const { return kind_ == kEmpty; }
  // The ETag as the server sent it.
  std::string str() const;
  operator std::string() const { return str(); }  // NOLINT(google-explicit-constructor)
  // Its 16 digest bytes if it is an MD5 ETag (32 hex digits, no part count), else null.
  const unsigned char* md5() const { return kind_ == kMd5 ? bytes_ : nullptr; }

  friend bool operator==(const Etag& a, const Etag& b);
  friend bool operator==(const Etag& a, std::string_view b) { return a == Etag(b); }
  friend bool operator==(const Etag& a, const std::string& b) { return a == Etag(b); }
  friend bool operator==(const Etag& a, const char* b) { return a == Etag(b); }

 private:
  enum Kind : uint8_t { kEmpty, kMd5, kMd5Parts, kHeap };
  // kHeap: the copy, a uint32_t length and the bytes, in one allocation.
  const char* heap() const {
    const char* p;
    std::memcpy(&p, bytes_, sizeof p);
    return p;
  }
  std::string_view heap_view() const;
  void release();

  unsigned char bytes_[16] = {};  // kMd5, kMd5Parts: the digest; kHeap: the copy's address
  Kind kind_ = kEmpty;
  unsigned char parts_[3] = {};  // kMd5Parts: N, little endian
};

static_assert(sizeof(Etag) == 20 && alignof(Etag) == 1);

}  // namespace warmfs
