#include "fuse/handover_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/hex.h"
#include "common/log.h"

namespace warmfs::handover {

namespace {

constexpr uint64_t kRootId = 1;  // FUSE_ROOT_ID

}  // namespace

void JournalState::looked_up(uint64_t node, uint64_t parent, std::string name, uint64_t n) {
  if (n == 0) return;
  JournalNode& j = nodes[node];
  j.parent = parent;
  j.name = std::move(name);
  // Held at the largest count rather than wrapped to 0 (a journal may say anything).
  j.nlookup = n > UINT64_MAX - j.nlookup ? UINT64_MAX : j.nlookup + n;
}

void JournalState::forgot(uint64_t node, uint64_t n) {
  auto it = nodes.find(node);
  if (it == nodes.end()) return;
  it->second.nlookup = n >= it->second.nlookup ? 0 : it->second.nlookup - n;
  if (it->second.nlookup == 0) nodes.erase(it);
}

void JournalState::renamed(uint64_t parent, const std::string& name, uint64_t new_parent,
                           const std::string& new_name) {
  for (auto& [_, j] : nodes) {
    if (j.parent == parent && j.name == name) {
      j.parent = new_parent;
      j.name = new_name;
    }
  }
}

std::string JournalState::path_of(uint64_t node) const {
  std::string path;
  for (int depth = 0; node != kRootId && depth < 64; ++depth) {
    auto it = nodes.find(node);
    if (it == nodes.end()) return "node " + std::to_string(node);
    path = "/" + it->second.name + path;
    node = it->second.parent;
  }
  return path.empty() ? "/" : path;
}

JournalState parse_journal(std::string_view text) {
  JournalState state;
  std::istringstream lines{std::string(text)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    char kind = 0;
    f >> kind;
    if (kind == 'L' || kind == 'N') {
      uint64_t node = 0, parent = 0, n = 1;
      std::string hex;
      f >> node >> parent >> hex;
      if (kind == 'N') f >> n;
      auto name = from_hex(hex);
      if (f && name) state.looked_up(node, parent, std::move(*name), n);
    } else if (kind == 'F') {
      uint64_t node = 0, n = 0;
      f >> node >> n;
      if (f) state.forgot(node, n);
    } else if (kind == 'R') {
      uint64_t parent = 0, new_parent = 0;
      std::string hex, new_hex;
      f >> parent >> hex >> new_parent >> new_hex;
      auto name = from_hex(hex);
      auto new_name = from_hex(new_hex);
      if (f && name && new_name) state.renamed(parent, *name, new_parent, *new_name);
    } else if (kind == 'H') {
      uint64_t token = 0, node = 0;
      uint32_t flags = 0;
      int dir = 0;
      f >> token >> node >> flags >> dir;
      if (f) state.handles[token] = JournalHandle{node, flags, dir != 0};
    } else if (kind == 'X') {
      uint64_t token = 0;
      f >> token;
      if (f) state.handles.erase(token);
    }
  }
  return state;
}

std::string lookup_line(uint64_t node, uint64_t parent, const std::string& name) {
  return "L " + std::to_string(node) + " " + std::to_string(parent) + " " + to_hex(name) + "\n";
}

std::string forget_line(uint64_t node, uint64_t n) {
  return "F " + std::to_string(node) + " " + std::to_string(n) + "\n";
}

std::string rename_line(uint64_t parent, const std::string& name, uint64_t new_parent,
                        const std::string& new_name) {
  return "R " + std::to_string(parent) + " " + to_hex(name) + " " + std::to_string(new_parent) +
         " " + to_hex(new_name) + "\n";
}

std::string handle_line(uint64_t token, const JournalHandle& h) {
  return "H " + std::to_string(token) + " " + std::to_string(h.nodeid) + " " +
         std::to_string(h.flags) + " " + (h.dir ? "1" : "0") + "\n";
}

std::string release_line(uint64_t token) { return "X " + std::to_string(token) + "\n"; }

std::string compact_journal(const JournalState& state) {
  std::string out;
  for (const auto& [node, j] : state.nodes) {
    out += "N " + std::to_string(node) + " " + std::to_string(j.parent) + " " + to_hex(j.name) +
           " " + std::to_string(j.nlookup) + "\n";
  }
  for (const auto& [token, h] : state.handles) out += handle_line(token, h);
  return out;
}

JournalFile::~JournalFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status JournalFile::rewrite(const std::string& text) {
  if (!write_file_atomic(path_, text.data(), text.size())) {
    bytes_ = 0;
    return Status(Errc::kIo, "cannot write " + path_ + ": " + std::strerror(errno));
  }
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) {
    bytes_ = 0;  // the old descriptor writes to the replaced file: those lines are lost
    return Status(Errc::kIo, "cannot open " + path_ + ": " + std::strerror(errno));
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  bytes_ = text.size();
  return Status::ok();
}

void JournalFile::append(const std::string& lines) {
  if (fd_ < 0 || ::write(fd_, lines.data(), lines.size()) != static_cast<ssize_t>(lines.size()))
    log::warn("restart journal: write failed: {}", std::strerror(errno));
  bytes_ += lines.size();
}

bool write_file_atomic(const std::string& path, const void* data, size_t size) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const bool ok = ::write(fd, data, size) == static_cast<ssize_t>(size);
  ::close(fd);
  return ok && ::rename(tmp.c_str(), path.c_str()) == 0;
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace warmfs::handover
