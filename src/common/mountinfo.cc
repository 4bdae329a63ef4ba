#include "common/mountinfo.h"

#include <fstream>
#include <sstream>

namespace warmfs {
namespace {

// proc(5) escapes space, tab, newline and backslash in paths as \ and three octal digits.
std::string unescape(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const std::string_view oct = field.substr(i + 1, 3);
      if (oct.find_first_not_of("01234567") == std::string_view::npos) {
        out.push_back(static_cast<char>((oct[0] - '0') * 64 + (oct[1] - '0') * 8 + (oct[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

}  // namespace

std::vector<MountInfoEntry> parse_mountinfo(std::string_view text) {
  std::vector<MountInfoEntry> out;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point, opts, field;
    if (!(fields >> id >> parent >> dev >> root >> point >> opts)) continue;
    bool separated = false;
    while (fields >> field) {
      if (field == "-") {
        separated = true;
        break;
      }
    }
    MountInfoEntry e;
    if (!separated || !(fields >> e.fstype)) continue;
    fields >> e.source;
    e.device = dev;
    e.mountpoint = unescape(point);
    e.source = unescape(e.source);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<MountInfoEntry> read_mountinfo() {
  std::ifstream in("/proc/self/mountinfo");
  std::stringstream text;
  text << in.rdbuf();
  return parse_mountinfo(text.str());
}

std::optional<MountInfoEntry> top_mount_at(const std::vector<MountInfoEntry>& mounts,
                                           std::string_view path) {
  std::optional<MountInfoEntry> found;
  for (const MountInfoEntry& e : mounts) {
    if (e.mountpoint == path) found = e;
  }
  return found;
}

}  // namespace warmfs
