// Checksums and encodings S3 write requests carry: Content-MD5, x-amz-checksum-crc32c and
// the ETag S3 gives a multipart object. Pure functions; thread safe.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace warmfs::s3 {

// Standard base64 (RFC 4648, with padding).
std::string base64_encode(std::span<const unsigned char> data);
// Base64 of the 16-byte MD5 of data: the Content-MD5 header value.
std::string md5_base64(std::span<const std::byte> data);
// Lower-case hex MD5 of data: the ETag S3 gives a single-part, unencrypted object.
std::string md5_hex(std::span<const std::byte> data);
// Base64 of the big-endian 4-byte CRC32C of data: the x-amz-checksum-crc32c value.
std::string crc32c_base64(std::span<const std::byte> data);
// The ETag of an object assembled from parts whose ETags are hex MD5s: the hex MD5 of the
// concatenated binary MD5s, then "-" and the part count. Empty if an ETag is not 32 hex digits.
std::string multipart_etag(std::span<const std::string> part_etags);
// Lower-case hex SHA-256 of data (the SigV4 payload hash).
std::string sha256_hex(std::span<const std::byte> data);

inline std::string_view as_chars(std::span<const std::byte> data) {
  return {reinterpret_cast<const char*>(data.data()), data.size()};
}
inline std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace warmfs::s3
