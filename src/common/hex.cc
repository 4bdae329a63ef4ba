#include "common/hex.h"

namespace warmfs {
namespace {

const char* digits_for(HexCase letters) {
  return letters == HexCase::kUpper ? "0123456789ABCDEF" : "0123456789abcdef";
}

}  // namespace

void append_hex_byte(std::string& out, unsigned char byte, HexCase letters) {
  const char* d = digits_for(letters);
  out.push_back(d[byte >> 4]);
  out.push_back(d[byte & 0xF]);
}

std::string to_hex(std::span<const unsigned char> bytes, HexCase letters) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) append_hex_byte(out, c, letters);
  return out;
}

std::string to_hex(std::string_view bytes, HexCase letters) {
  return to_hex(std::span(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()),
                letters);
}

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> from_hex(std::string_view digits) {
  if (digits.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(digits.size() / 2);
  for (size_t i = 0; i < digits.size(); i += 2) {
    const int hi = hex_digit_value(digits[i]);
    const int lo = hex_digit_value(digits[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi << 4 | lo));
  }
  return out;
}

}  // namespace warmfs
