// Human sizes and durations on the command line: "512M", "4G", "1.5T", "30s", "2h".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warmfs {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;
inline constexpr uint64_t kGiB = 1024 * kMiB;

// Binary units (K, M, G, T, optionally followed by "i" and/or "B"); a bare number is bytes.
// Returns nullopt for anything malformed, negative, or overflowing.
std::optional<uint64_t> parse_size(std::string_view text);
// The longest duration parse_duration_seconds accepts: 100 years. Callers turn durations into
// 64-bit milliseconds and nanoseconds (which end 292 years out), so a longer one would
// overflow them.
inline constexpr double kMaxDurationSeconds = 100.0 * 365 * 86400;
// Seconds: a bare number, or a number with s, m, h or d. nullopt for anything malformed or
// longer than kMaxDurationSeconds.
std::optional<double> parse_duration_seconds(std::string_view text);
// "1.5 GiB" style, for humans.
std::string format_size(uint64_t bytes);

}  // namespace warmfs
