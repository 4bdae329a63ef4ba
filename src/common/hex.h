// Hexadecimal text: digests and signatures (lower case), percent escapes (upper case, as
// SigV4's URI encoding wants), and key bytes in the staging journal. One home for what S3,
// SigV4, staging and the tests' object store all need.
//
// Pure functions; thread safe.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace warmfs {

enum class HexCase { kLower, kUpper };

// Two digits per byte.
std::string to_hex(std::span<const unsigned char> bytes, HexCase letters = HexCase::kLower);
std::string to_hex(std::string_view bytes, HexCase letters = HexCase::kLower);

// The two digits of one byte, appended to out.
void append_hex_byte(std::string& out, unsigned char byte, HexCase letters = HexCase::kLower);

// The value of a hex digit of either case, or -1.
int hex_digit_value(char c);

// The bytes of an even number of hex digits of either case; nullopt if odd or not hex.
std::optional<std::string> from_hex(std::string_view digits);

}  // namespace warmfs
