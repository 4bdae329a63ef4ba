#include "fs/order_file.h"

#include <charconv>

#include "common/hex.h"

namespace warmfs {
namespace {

bool needs_escape(unsigned char c) { return c == '%' || c <= 0x20 || c == 0x7f; }

Result<std::string> unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    const int hi = i + 2 < s.size() ? hex_digit_value(s[i + 1]) : -1;
    const int lo = i + 2 < s.size() ? hex_digit_value(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) return Status(Errc::kInvalidArgument, "bad %XX escape in the path");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

Status check_path(std::string_view p) {
  if (p.empty()) return Status(Errc::kInvalidArgument, "empty path");
  if (p.front() == '/') return Status(Errc::kInvalidArgument, "the path must be relative");
  size_t start = 0;
  while (start <= p.size()) {
    size_t slash = p.find('/', start);
    if (slash == std::string_view::npos) slash = p.size();
    const std::string_view c = p.substr(start, slash - start);
    if (c.empty() || c == "." || c == "..") {
      return Status(Errc::kInvalidArgument, "the path has an empty, . or .. component");
    }
    start = slash + 1;
  }
  return Status::ok();
}

bool parse_u64(std::string_view s, uint64_t& v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

bool is_sep(char c) { return c == ' ' || c == '\t'; }

}  // namespace

std::string escape_order_path(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (!needs_escape(c)) {
      out += ch;
      continue;
    }
    out += '%';
    append_hex_byte(out, c, HexCase::kUpper);
  }
  return out;
}

Result<std::vector<OrderEntry>> parse_order(std::string_view text) {
  std::vector<OrderEntry> entries;
  size_t line_no = 0;
  bool header = false;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto fail = [&](const std::string& why) {
      return Status(Errc::kInvalidArgument, "line " + std::to_string(line_no) + ": " + why);
    };
    if (!header) {
      if (line != kOrderHeader) {
        return fail("expected \"" + std::string(kOrderHeader) + "\" (the format and its version)");
      }
      header = true;
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string_view> fields;
    size_t f = 0;
    while (f <= line.size()) {
      size_t e = f;
      while (e < line.size() && !is_sep(line[e])) ++e;
      fields.push_back(line.substr(f, e - f));
      f = e + 1;
    }
    if (fields.size() != 1 && fields.size() != 3) {
      return fail("expected PATH or PATH OFFSET LENGTH (escape spaces in paths as %20)");
    }
    OrderEntry entry;
    Result<std::string> path = unescape(fields[0]);
    if (!path.is_ok()) return fail(path.status().message());
    if (Status st = check_path(*path); !st.is_ok()) return fail(st.message());
    entry.path = std::move(path).value();
    if (fields.size() == 3) {
      if (!parse_u64(fields[1], entry.offset) || !parse_u64(fields[2], entry.length)) {
        return fail("OFFSET and LENGTH must be decimal byte counts");
      }
      if (entry.length == 0) return fail("LENGTH must not be 0");
    }
    entries.push_back(std::move(entry));
    if (entries.size() >= (1ull << 32) - 1) return fail("too many entries");
  }
  if (!header) return Status(Errc::kInvalidArgument, "line 1: empty order file");
  return entries;
}

}  // namespace warmfs
