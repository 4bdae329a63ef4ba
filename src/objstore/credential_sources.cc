// The sources of temporary credentials that are not STS: the answers of the container
// endpoint and IMDS, credential_process (its output, its command line, running it).
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>

#include "objstore/credential_chain.h"
#include "objstore/time_format.h"

namespace warmfs::s3 {
namespace {

std::string str_member(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<std::optional<std::chrono::system_clock::time_point>> expiration_of(const nlohmann::json& j,
                                                                           const char* what) {
  std::string text = str_member(j, "Expiration");
  if (text.empty()) return std::optional<std::chrono::system_clock::time_point>();
  auto secs = parse_iso8601(text);
  if (!secs) return Status(Errc::kCorrupt, fmt::format("{}: bad Expiration '{}'", what, text));
  return std::optional(time_from_epoch_seconds(*secs));
}

}  // namespace

Result<TemporaryCredentials> parse_process_credentials(std::string_view json) {
  constexpr const char* kWhat = "credential_process output";
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status(Errc::kCorrupt, fmt::format("{} is not a JSON object", kWhat));
  }
  auto version = j.find("Version");
  if (version == j.end() || !version->is_number_integer() || version->get<int>() != 1) {
    return Status(Errc::kCorrupt, fmt::format("{}: Version must be 1", kWhat));
  }
  TemporaryCredentials out;
  out.credentials = {str_member(j, "AccessKeyId"), str_member(j, "SecretAccessKey"),
                     str_member(j, "SessionToken")};
  if (out.credentials.access_key_id.empty() || out.credentials.secret_access_key.empty()) {
    return Status(Errc::kCorrupt,
                  fmt::format("{}: AccessKeyId and SecretAccessKey are required", kWhat));
  }
  WARMFS_ASSIGN_OR_RETURN(out.expiration, expiration_of(j, kWhat));
  return out;
}

Result<TemporaryCredentials> parse_metadata_credentials(std::string_view json) {
  constexpr const char* kWhat = "credentials document";
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status(Errc::kCorrupt, fmt::format("{} is not a JSON object", kWhat));
  }
  if (auto code = str_member(j, "Code"); !code.empty() && code != "Success") {
    return Status(Errc::kAccessDenied,
                  fmt::format("{}: Code {}: {}", kWhat, code, str_member(j, "Message")));
  }
  TemporaryCredentials out;
  out.credentials = {str_member(j, "AccessKeyId"), str_member(j, "SecretAccessKey"),
                     str_member(j, "Token")};
  if (out.credentials.access_key_id.empty() || out.credentials.secret_access_key.empty()) {
    return Status(Errc::kCorrupt,
                  fmt::format("{}: AccessKeyId and SecretAccessKey are required", kWhat));
  }
  WARMFS_ASSIGN_OR_RETURN(out.expiration, expiration_of(j, kWhat));
  return out;
}

Result<std::vector<std::string>> split_command(std::string_view command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote == '\'') {
      if (c == '\'')
        quote = 0;
      else
        word += c;
      continue;
    }
    if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
      in_word = true;
      continue;
    }
    if (quote == '"') {
      if (c == '"')
        quote = 0;
      else
        word += c;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) return Status(Errc::kInvalidArgument, "credential_process: unterminated quote");
  if (in_word) words.push_back(std::move(word));
  if (words.empty()) return Status(Errc::kInvalidArgument, "credential_process is empty");
  return words;
}

Result<ProcessOutput> run_process(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout) {
  if (argv.empty()) return Status(Errc::kInvalidArgument, "no command");
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    return Status(Errc::kIo, std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return Status(Errc::kIo, std::string("pipe: ") + std::strerror(errno));
  }
  // The program's path is found before fork: only async-signal-safe calls may run between
  // fork and exec in a process with other threads, and execvp's PATH search is not one.
  std::string program = argv[0];
  if (program.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
    while (!dirs.empty()) {
      const size_t colon = dirs.find(':');
      const std::string candidate = std::string(dirs.substr(0, colon)) + "/" + argv[0];
      if (::access(candidate.c_str(), X_OK) == 0) {
        program = candidate;
        break;
      }
      dirs.remove_prefix(colon == std::string_view::npos ? dirs.size() : colon + 1);
    }
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return Status(Errc::kIo, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execv(program.c_str(), args.data());
    const char msg[] = "cannot run credential_process\n";
    [[maybe_unused]] ssize_t n = ::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ProcessOutput result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    int r = ::poll(fds, 2, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      std::string& sink = i == 0 ? result.out : result.err;
      if (sink.size() < (1 << 20)) sink.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Status(Errc::kTimeout,
                  fmt::format("{} did not finish within {} ms (killed)", argv[0], timeout.count()));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace warmfs::s3
