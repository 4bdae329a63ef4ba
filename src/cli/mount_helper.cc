// mount(8)'s helper (/sbin/mount.warmfs, /sbin/mount.fuse.warmfs): translate its arguments
// (cli/mount_options.h), then become `warmfs mount`, which daemonises and returns once the
// mount answers, as mount(8) expects of a helper.
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/mount_options.h"

namespace warmfs::cli {
namespace {

IdLookups system_lookups() {
  IdLookups l;
  l.user = [](const std::string& name) -> std::optional<int64_t> {
    const passwd* pw = ::getpwnam(name.c_str());
    if (pw == nullptr) return std::nullopt;
    return static_cast<int64_t>(pw->pw_uid);
  };
  l.group = [](const std::string& name) -> std::optional<int64_t> {
    const group* gr = ::getgrnam(name.c_str());
    if (gr == nullptr) return std::nullopt;
    return static_cast<int64_t>(gr->gr_gid);
  };
  return l;
}

std::string quoted_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_of(" \t'\"\\$`") == std::string::npos;
    out += plain ? a : "'" + a + "'";
  }
  return out;
}

}  // namespace

int run_mount_helper(int argc, char** argv) {
  const char* slash = std::strrchr(argv[0], '/');
  const std::string self = slash != nullptr ? slash + 1 : argv[0];
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
    std::printf(
        "usage: %s s3://BUCKET[/PREFIX] MOUNTPOINT [-sfnv] [-o OPTION[,OPTION...]]\n"
        "mount(8)'s helper for warmfs: the options are warmfs mount's long flags\n"
        "(endpoint=URL, cache-dir=DIR, read-only, ...) and mount's own (ro, uid=, _netdev,\n"
        "nofail, x-systemd.*, ...). See mount.warmfs(8).\n",
        self.c_str());
    return kExitOk;
  }
  auto call = translate_mount_helper_args(args, system_lookups());
  if (!call.is_ok()) {
    std::fprintf(stderr, "%s: %s\n", self.c_str(), call.status().message().c_str());
    return kExitUsage;
  }
  for (const auto& w : call->warnings) std::fprintf(stderr, "%s: %s\n", self.c_str(), w.c_str());
  if (call->verbose || call->fake) {
    std::fprintf(stderr, "%s: %s\n", self.c_str(), quoted_command(call->argv).c_str());
  }
  if (call->fake) return kExitOk;
  for (const auto& [name, value] : call->env) ::setenv(name.c_str(), value.c_str(), 1);
  // At boot mount(8) runs without HOME; ~/.aws of the mounting user is still meant.
  if (std::getenv("HOME") == nullptr) {
    if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr) ::setenv("HOME", pw->pw_dir, 1);
  }
  std::vector<char*> exec_argv;
  for (auto& a : call->argv) exec_argv.push_back(a.data());
  exec_argv.push_back(nullptr);
  std::fflush(nullptr);
  ::execv("/proc/self/exe", exec_argv.data());
  std::fprintf(stderr, "%s: cannot run warmfs mount: %s\n", self.c_str(), std::strerror(errno));
  return kExitFailure;
}

}  // namespace warmfs::cli
