#include "meta/name.h"

#include <stdexcept>

namespace warmfs {

Name::Name(std::string_view s) {
  if (s.size() <= kInline) {
    std::memcpy(bytes_, s.data(), s.size());
    bytes_[kTag] = static_cast<unsigned char>(s.size());
    return;
  }
  if (s.size() > UINT32_MAX) throw std::length_error("name too long");
  char* p = new char[s.size()];
  std::memcpy(p, s.data(), s.size());
  const auto n = static_cast<uint32_t>(s.size());
  std::memcpy(bytes_, &p, sizeof p);
  std::memcpy(bytes_ + sizeof p, &n, sizeof n);
  bytes_[kTag] = kHeapTag;
}

Name& Name::operator=(Name&& other) noexcept {
  if (this != &other) {
    release();
    std::memcpy(bytes_, other.bytes_, sizeof bytes_);
    other.bytes_[kTag] = 0;
  }
  return *this;
}

}  // namespace warmfs
