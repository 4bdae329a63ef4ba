// split_key_range: boundary keys that cut the rest of one directory's listing into ranges of
// about equal size, so a flat directory of many pages lists with several requests in flight.
//
// What has been listed of a range (its first and last names, how many items) gives a density;
// the names' bytes give an alphabet. A key is read as a fraction, its bytes from a position
// p on as digits in that alphabet, and the rest of the range (last, hi) is cut at equal steps of
// that fraction. p is a few bytes above where the listed names start to differ, as the rest of
// a directory usually differs higher up than its first page does (shard-000000 to shard-000999,
// then shard-001000 on). The guess costs requests, never keys: any boundaries between last and
// hi split the range correctly, and a range that turns out large is split again.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace warmfs {

struct KeySplitInput {
  std::string_view dir;                 // the listing's prefix: every name starts with it
  std::string_view first;               // the range's first name listed
  std::string_view last;                // its last name listed so far (the rest is after it)
  std::string_view hi;                  // the range's end (inclusive); empty: the end of dir
  size_t listed = 0;                    // names listed so far in the range
  std::span<const std::string> sample;  // names listed (for the alphabet), e.g. the last page
};

// Boundaries b1 < b2 < ... strictly between last and hi (below dir's end when hi is empty),
// about items_per_part names apart by the estimate, at most max_parts - 1 of them; empty when
// the rest looks smaller than two parts.
std::vector<std::string> split_key_range(const KeySplitInput& in, size_t items_per_part,
                                         size_t max_parts);

}  // namespace warmfs
