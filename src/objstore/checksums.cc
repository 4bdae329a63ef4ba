#include "objstore/checksums.h"

#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <vector>

#include "common/crc32c.h"
#include "common/hex.h"
#include "objstore/sigv4.h"

namespace warmfs::s3 {
namespace {

std::array<unsigned char, 16> md5(std::span<const std::byte> data) {
  std::array<unsigned char, 16> out{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_md5(), nullptr);
  return out;
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
      const int hi = hex_digit_value(etag[i]);
      const int lo = hex_digit_value(etag[i + 1]);
      if (hi < 0 || lo < 0) return {};
      digests.push_back(static_cast<std::byte>(hi * 16 + lo));
    }
  }
  return md5_hex(digests) + "-" + std::to_string(part_etags.size());
}

std::string sha256_hex(std::span<const std::byte> data) { return s3::sha256_hex(as_chars(data)); }

}  // namespace warmfs::s3
