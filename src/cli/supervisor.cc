// The supervisor of a restartable mount (cli/supervisor.h) and `warmfs restart`.
#include "cli/supervisor.h"

#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <vector>

#include "cli/daemon.h"
#include "common/log.h"
#include "common/service_notify.h"
#include "fuse/fuse_session.h"
#include "fuse/handover.h"

namespace warmfs::cli {
namespace {

std::vector<std::string> g_command_line;  // main's argv, set once before any thread starts
std::string g_start_dir;                  // the directory warmfs was started in

constexpr int kMaxCrashes = 5;  // within kCrashWindow: the supervisor gives up
constexpr auto kCrashWindow = std::chrono::seconds(60);

std::string run_root() {
  if (::geteuid() == 0) return "/run/warmfs";
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && xdg[0] == '/')
    return std::string(xdg) + "/warmfs";
  return "/tmp/warmfs-" + std::to_string(::geteuid());
}

// The binary on disk now (after an upgrade: the new one).
std::string own_binary() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<size_t>(n));
  const std::string deleted = " (deleted)";
  if (path.size() > deleted.size() && path.ends_with(deleted))
    path.resize(path.size() - deleted.size());
  return path;
}

bool write_text(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) return false;
  }
  return ::rename(tmp.c_str(), path.c_str()) == 0;
}

// True once the kernel has ended the mount's connection (unmounted or aborted).
bool disconnected(int fd) {
  pollfd p{fd, 0, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0;
}

void remove_state(const std::string& dir) {
  for (const char* f : {"supervisor", "init", "journal", "generation", "supervisor.tmp", "init.tmp",
                        "journal.tmp", "generation.tmp"}) {
    ::unlink((dir + "/" + f).c_str());
  }
  ::rmdir(dir.c_str());
}

// Starts a daemon on the session fd; its readiness comes on *ready_read.
pid_t spawn_daemon(const std::string& binary, int session_fd, const std::string& dir,
                   const std::string& mountpoint, const sigset_t& old_mask, int* ready_read) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return -1;
  std::vector<std::string> args = g_command_line;
  bool foreground = false;
  for (const auto& a : args) foreground = foreground || a == "-f" || a == "--foreground";
  if (!foreground) args.push_back("--foreground");
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    ::unsetenv("NOTIFY_SOCKET");  // the supervisor is the service's main process: it notifies
    ::setpgid(0, 0);  // a terminal's ^C goes to the supervisor, which unmounts, not to it
    const int ready_write = ::dup(fds[1]);  // without FD_CLOEXEC: the daemon writes it
    args.insert(args.end(),
                {"--session-fd", std::to_string(session_fd), "--session-state", dir,
                 "--session-mountpoint", mountpoint, "--ready-fd", std::to_string(ready_write)});
    if (::chdir(g_start_dir.c_str()) != 0) ::_exit(127);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  *ready_read = fds[0];
  return pid;
}

// The daemon's readiness message: "0", or "1<why>" (empty if it exited before saying).
std::string read_ready(int fd) {
  std::string msg;
  char buf[512];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    msg.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return msg;
}

// When process pid started (field 22 of /proc/PID/stat), to tell it from a later process
// given the same pid; empty if there is no such process.
std::string start_time_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return {};
  std::istringstream fields(text.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  return fields ? field : std::string();
}

void unmount_lazily(const std::string& mountpoint) {
  if (::umount2(mountpoint.c_str(), MNT_DETACH) == 0 || errno == EINVAL) return;
  // Not root: the setuid helper.
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execlp("fusermount3", "fusermount3", "-uz", mountpoint.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (pid > 0) ::waitpid(pid, nullptr, 0);
}

}  // namespace

void keep_command_line(int argc, char** argv) {
  g_command_line.assign(argv, argv + argc);
  char buf[PATH_MAX];
  g_start_dir = ::getcwd(buf, sizeof buf) != nullptr ? buf : "/";
}

std::string session_state_dir(const std::string& mountpoint) {
  std::string name = "mnt";
  for (unsigned char c : mountpoint) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      name += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      name += hex;
    }
  }
  return run_root() + "/" + name.substr(0, 240);
}

int run_supervisor(const FuseOptions& options, int ready_fd) {
  const std::string binary = own_binary();
  if (g_command_line.empty() || binary.empty()) {
    const Status st(Errc::kInternal, "--restartable: cannot find the warmfs binary to run");
    send_ready(ready_fd, st);
    return kExitFailure;
  }
  const bool foreground = ready_fd < 0;  // systemd's main process, if under systemd
  const std::string dir = session_state_dir(options.mountpoint);
  ::mkdir(run_root().c_str(), 0700);
  remove_state(dir);  // a supervisor of an earlier mount here that was killed
  if (::mkdir(dir.c_str(), 0700) != 0) {
    const Status st(Errc::kIo, "--restartable: cannot create " + dir + ": " + std::strerror(errno));
    send_ready(ready_fd, st);
    if (ready_fd < 0) print_error(st.message());
    return kExitFailure;
  }
  auto fd = mount_session_fd(options);
  if (!fd.is_ok()) {
    remove_state(dir);
    send_ready(ready_fd, fd.status());
    if (ready_fd < 0) print_error(fd.status().message());
    return kExitFailure;
  }
  // Signals are taken one at a time by sigwaitinfo below; daemons start with them unblocked.
  sigset_t set, old_mask;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGUSR1, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, sig);
  ::sigprocmask(SIG_BLOCK, &set, &old_mask);
  log::info("supervisor {} holds the mount at {}; state in {}", ::getpid(), options.mountpoint,
            dir);

  uint64_t served = 0;  // daemons that became ready
  bool stopping = false;
  std::deque<std::chrono::steady_clock::time_point> crashes;
  int exit_code = kExitOk;
  while (!stopping) {
    int ready_read = -1;
    const pid_t child = spawn_daemon(binary, *fd, dir, options.mountpoint, old_mask, &ready_read);
    if (child < 0) {
      log::error("supervisor: cannot start the daemon: {}", std::strerror(errno));
      exit_code = kExitFailure;
      break;
    }
    const std::string msg = read_ready(ready_read);
    if (msg == "0") {
      ++served;
      write_text(dir + "/supervisor", std::to_string(::getpid()) + " " + std::to_string(served) +
                                          " " + start_time_of(::getpid()));
      if (served > 1) log::info("supervisor: daemon {} serves {}", child, options.mountpoint);
    } else {
      log::error("supervisor: daemon {} did not become ready: {}", child,
                 msg.empty() ? "it exited" : msg.substr(1));
    }
    if (served == 1 && msg == "0") {
      // Under systemd (Type=notify, --foreground): ready once the first daemon answers.
      if (ready_fd < 0) service::notify_ready("mounted at " + options.mountpoint);
      send_ready(ready_fd, Status::ok());
      ready_fd = -1;
    } else if (served == 0) {
      // The first daemon failed: the mount is refused (as without --restartable).
      send_ready(ready_fd,
                 Status(Errc::kIo, msg.size() > 1 ? msg.substr(1) : "the mount daemon exited"));
      if (ready_fd < 0) print_error(msg.size() > 1 ? msg.substr(1) : "the mount daemon exited");
      ready_fd = -1;
      ::kill(child, SIGTERM);
      ::waitpid(child, nullptr, 0);
      unmount_lazily(options.mountpoint);
      exit_code = kExitFailure;
      break;
    }
    bool restart_requested = false;
    int wstatus = 0;
    while (true) {
      siginfo_t info{};
      const int sig = ::sigwaitinfo(&set, &info);
      if (sig == SIGUSR1) {
        log::info("supervisor: restart requested: stopping daemon {}", child);
        restart_requested = true;
        ::kill(child, SIGTERM);
      } else if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
        log::info("supervisor: signal {}: unmounting {}", sig, options.mountpoint);
        stopping = true;
        unmount_lazily(options.mountpoint);
        ::kill(child, SIGTERM);
      } else if (sig == SIGCHLD) {
        if (::waitpid(child, &wstatus, WNOHANG) == child) break;
      }
    }
    if (stopping || disconnected(*fd)) {
      if (foreground) service::notify_stopping("unmounted " + options.mountpoint);
      break;
    }
    if (!restart_requested) {
      const auto now = std::chrono::steady_clock::now();
      log::error("supervisor: daemon {} ended ({}) with the mount still there: starting another",
                 child,
                 WIFSIGNALED(wstatus) ? "signal " + std::to_string(WTERMSIG(wstatus))
                                      : "exit status " + std::to_string(WEXITSTATUS(wstatus)));
      crashes.push_back(now);
      while (!crashes.empty() && now - crashes.front() > kCrashWindow) crashes.pop_front();
      if (crashes.size() >= static_cast<size_t>(kMaxCrashes)) {
        log::error("supervisor: {} daemon crashes within a minute: giving up, unmounting {}",
                   crashes.size(), options.mountpoint);
        unmount_lazily(options.mountpoint);
        exit_code = kExitFailure;
        break;
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));  // no busy loop of failing starts
    }
  }
  ::close(*fd);
  remove_state(dir);
  log::info("supervisor: {} is unmounted", options.mountpoint);
  return exit_code;
}

int run_restart(const std::string& mountpoint) {
  char resolved[PATH_MAX];
  if (::realpath(mountpoint.c_str(), resolved) == nullptr) {
    print_error("mountpoint " + mountpoint + ": " + std::strerror(errno));
    return kExitFailure;
  }
  const std::string file = session_state_dir(resolved) + "/supervisor";
  // The file of a supervisor that was killed stays: its pid must still be that supervisor.
  auto read_state = [&file](pid_t* pid, uint64_t* served) {
    std::ifstream in(file);
    long p = 0;
    std::string started;
    in >> p >> *served >> started;
    *pid = static_cast<pid_t>(p);
    return static_cast<bool>(in) && p > 0 && start_time_of(*pid) == started;
  };
  pid_t pid = 0;
  uint64_t served = 0;
  if (!read_state(&pid, &served)) {
    print_error(std::string(resolved) +
                " is not a restartable warmfs mount (mounted without --restartable?)");
    return kExitFailure;
  }
  if (::kill(pid, SIGUSR1) != 0) {
    print_error("cannot signal the supervisor of " + std::string(resolved) + " (pid " +
                std::to_string(pid) + "): " + std::strerror(errno));
    return kExitFailure;
  }
  // Returns once the new daemon answers, so a script finds the mount served when it returns.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    pid_t now_pid = 0;
    uint64_t now_served = 0;
    if (read_state(&now_pid, &now_served) && now_served > served) return kExitOk;
    if (::kill(pid, 0) != 0) {
      print_error("the supervisor of " + std::string(resolved) + " ended during the restart");
      return kExitFailure;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  print_error("the daemon of " + std::string(resolved) + " did not come back within 120 s");
  return kExitFailure;
}

}  // namespace warmfs::cli
