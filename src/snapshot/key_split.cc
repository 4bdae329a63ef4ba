#include "snapshot/key_split.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace warmfs {
namespace {

// Bytes above the first difference of the listed names where the rest is assumed to differ.
constexpr size_t kHeadroom = 3;

size_t common_prefix(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// Keys from byte p on as a fraction in [0, 1): digit 0 is the end of the key, digit r + 1 the
// r-th byte of the alphabet (a byte outside it counts as the alphabet's byte below it), so
// the order of keys is kept (non-decreasing).
class Digits {
 public:
  Digits(size_t p, const std::array<bool, 256>& in_alphabet) : p_(p) {
    for (int c = 0; c < 256; ++c) {
      rank_[c] = static_cast<unsigned>(alphabet_.size());
      if (in_alphabet[c]) {
        alphabet_.push_back(static_cast<char>(c));
        rank_[c] = static_cast<unsigned>(alphabet_.size());
      }
    }
    base_ = static_cast<long double>(alphabet_.size() + 1);
    // As many digits as a long double's 64-bit mantissa holds.
    digits_ = std::max<size_t>(1, static_cast<size_t>(60.0 / std::log2(double(base_))));
  }

  long double value(std::string_view key) const {
    long double v = 0, scale = 1;
    for (size_t i = 0; i < digits_; ++i) {
      scale /= base_;
      if (p_ + i >= key.size()) break;
      v += scale * rank_[static_cast<unsigned char>(key[p_ + i])];
    }
    return v;
  }

  // The key head (bytes before p) followed by v's digits.
  std::string key(std::string_view head, long double v) const {
    std::string out(head);
    for (size_t i = 0; i < digits_; ++i) {
      v *= base_;
      long double d = std::floor(v);
      d = std::clamp<long double>(d, 0, static_cast<long double>(alphabet_.size()));
      v -= d;
      if (d == 0) break;
      out.push_back(alphabet_[static_cast<size_t>(d) - 1]);
    }
    return out;
  }

 private:
  size_t p_;
  std::array<unsigned, 256> rank_{};
  std::string alphabet_;
  long double base_ = 1;
  size_t digits_ = 1;
};

}  // namespace

std::vector<std::string> split_key_range(const KeySplitInput& in, size_t items_per_part,
                                         size_t max_parts) {
  std::vector<std::string> out;
  if (in.last.size() < in.dir.size() || max_parts < 2 || items_per_part == 0) return out;
  const size_t differ = common_prefix(in.first, in.last);
  size_t p = differ > in.dir.size() + kHeadroom ? differ - kHeadroom : in.dir.size();
  if (!in.hi.empty()) p = std::min(p, common_prefix(in.last, in.hi));
  p = std::max(p, in.dir.size());

  std::array<bool, 256> alphabet{};
  auto add = [&](std::string_view name) {
    for (size_t i = p; i < name.size(); ++i) alphabet[static_cast<unsigned char>(name[i])] = true;
  };
  for (const std::string& name : in.sample) add(name);
  add(in.first);
  add(in.last);
  add(in.hi);
  const Digits digits(p, alphabet);

  const long double vf = digits.value(in.first);
  const long double vl = digits.value(in.last);
  const long double vh = in.hi.empty() ? 1.0L : digits.value(in.hi);
  if (vh <= vl) return out;
  const long double per_part = static_cast<long double>(items_per_part);
  long double parts = static_cast<long double>(max_parts);
  if (vl > vf) {
    const long double rest = static_cast<long double>(in.listed) * (vh - vl) / (vl - vf);
    parts = std::min(parts, std::floor(rest / per_part));
  }
  if (parts < 2) return out;

  const std::string_view head = in.last.substr(0, p);
  const size_t n = static_cast<size_t>(parts);
  for (size_t i = 1; i < n; ++i) {
    std::string b = digits.key(head, vl + (vh - vl) * static_cast<long double>(i) / parts);
    if (b <= in.last || (!in.hi.empty() && b >= in.hi)) continue;
    if (!out.empty() && b <= out.back()) continue;
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace warmfs
