#include "objstore/checksums.h"

#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <vector>

#include "common/crc32c.h"
#include "objstore/sigv4.h"

namespace warmfs::s3 {
namespace {

std::array<unsigned char, 16> md5(std::span<const std::byte> data) {
  std::array<unsigned char, 16> out{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_md5(), nullptr);
  return out;
}

std::string to_hex(std::span<const unsigned char> data) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(data.size() * 2);
  for (unsigned char c : data) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xF]);
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string base64_encode(std::span<const unsigned char> data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data.data(),
                                static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string md5_base64(std::span<const std::byte> data) { return base64_encode(md5(data)); }

std::string md5_hex(std::span<const std::byte> data) { return to_hex(md5(data)); }

std::string crc32c_base64(std::span<const std::byte> data) {
  const uint32_t c = crc32c(data);
  const std::array<unsigned char, 4> be = {
      static_cast<unsigned char>(c >> 24), static_cast<unsigned char>(c >> 16),
      static_cast<unsigned char>(c >> 8), static_cast<unsigned char>(c)};
  return base64_encode(be);
}

std::string multipart_etag(std::span<const std::string> part_etags) {
  std::vector<std::byte> digests;
  digests.reserve(part_etags.size() * 16);
  for (const std::string& etag : part_etags) {
    if (etag.size() != 32) return {};
    for (size_t i = 0; i < 32; i += 2) {
      const int hi = hex_value(etag[i]);
      const int lo = hex_value(etag[i + 1]);
      if (hi < 0 || lo < 0) return {};
      digests.push_back(static_cast<std::byte>(hi * 16 + lo));
    }
  }
  return md5_hex(digests) + "-" + std::to_string(part_etags.size());
}

std::string sha256_hex(std::span<const std::byte> data) { return s3::sha256_hex(as_chars(data)); }

}  // namespace warmfs::s3
