// Cache-server tokens (cli/token_file.h).
#include "cli/token_file.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/log.h"

namespace warmfs::cli {

Result<std::string> read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status(Errc::kInvalidArgument,
                  fmt::format("{} {}: {}", what, path, std::strerror(errno)));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Result<std::string> read_token_file(const std::string& path) {
  WARMFS_ASSIGN_OR_RETURN(std::string text, read_file(path, "--token-file"));
  const size_t first = text.find_first_not_of(" \t\r\n");
  const size_t last = text.find_last_not_of(" \t\r\n");
  if (first == std::string::npos)
    return Status(Errc::kInvalidArgument, "--token-file " + path + " is empty");
  std::string token = text.substr(first, last - first + 1);
  for (unsigned char c : token) {
    if (c < 0x21 || c > 0x7e) {
      return Status(Errc::kInvalidArgument,
                    "--token-file " + path + ": the token must be one line of printable ASCII");
    }
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    log::warn("--token-file {} may be read by other users (mode {:o}); chmod 600 it", path,
              st.st_mode & 0777);
  }
  return token;
}

Result<std::string> token_or_none(const std::string& token_file, bool insecure, const char* who) {
  if (insecure) {
    if (!token_file.empty())
      return Status(Errc::kInvalidArgument,
                    "--token-file and --insecure-no-token exclude each other");
    return std::string();
  }
  if (token_file.empty()) {
    return Status(
        Errc::kInvalidArgument,
        fmt::format("{} needs --token-file (or --insecure-no-token on a trusted network)", who));
  }
  return read_token_file(token_file);
}

}  // namespace warmfs::cli
