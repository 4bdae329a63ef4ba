#include "common/hex.h"

#include <catch2/catch.hpp>
#include <string>

namespace warmfs {

TEST_CASE("hex: bytes to digits in either case and back", "[hex]") {
  const std::string bytes("\x00\x01\x7f\x80\xab\xff", 6);
  CHECK(to_hex(bytes) == "00017f80abff");
  CHECK(to_hex(bytes, HexCase::kUpper) == "00017F80ABFF");
  CHECK(from_hex("00017f80abff") == bytes);
  CHECK(from_hex("00017F80ABFF") == bytes);
  CHECK(to_hex(std::string_view()).empty());
  CHECK(from_hex("") == std::string());
}

TEST_CASE("hex: odd lengths and non-digits are refused", "[hex]") {
  CHECK_FALSE(from_hex("abc").has_value());
  CHECK_FALSE(from_hex("0g").has_value());
  CHECK_FALSE(from_hex("-1").has_value());
  CHECK(hex_digit_value('a') == 10);
  CHECK(hex_digit_value('F') == 15);
  CHECK(hex_digit_value('9') == 9);
  CHECK(hex_digit_value('g') == -1);
  std::string out = "%";
  append_hex_byte(out, 0x2f, HexCase::kUpper);
  CHECK(out == "%2F");
}

}  // namespace warmfs
