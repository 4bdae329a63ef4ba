// Temporary directories for tests: made fresh under /tmp, removed with all they hold when the
// object goes out of scope. One home for what the SSD, staging, filesystem, I/O and
// credential tests all need.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace warmfs::testing {

class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "warmfs-test") {
    std::string tmpl = "/tmp/" + std::string(prefix) + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmpl + " failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::filesystem::path operator/(std::string_view rel) const {
    return std::filesystem::path(path) / rel;
  }
  // The SSD tier's directory inside it, made by the tier when it opens.
  std::string cache() const { return path + "/cache"; }

  std::string path;
};

// A temporary HOME with an empty ~/.aws, for the shared credentials and config files.
struct TempHome {
  TempDir tmp{"warmfs-home"};
  std::filesystem::path dir = tmp.path;

  TempHome() { std::filesystem::create_directories(dir / ".aws"); }
  // Writes text to a file below the home; returns its path.
  std::string write(const std::string& rel, const std::string& text) const {
    std::ofstream(dir / rel) << text;
    return (dir / rel).string();
  }
};

}  // namespace warmfs::testing
