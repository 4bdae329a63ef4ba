// The mount daemon: fork, readiness pipe, the parent's wait (cli/daemon.h).
#include "cli/daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "common/heap.h"
#include "common/log.h"

namespace warmfs::cli {

void send_ready(int fd, const Status& st) {
  if (fd < 0) return;
  std::string msg = st.is_ok() ? "0" : "1" + st.message();
  [[maybe_unused]] ssize_t n = ::write(fd, msg.data(), msg.size());
  ::close(fd);
}

void prepare_process() {
  ::umask(077);
  limit_heap_arenas();
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
  }
}

namespace {

// Waits up to 10 s for a daemon that reported a failure to exit.
void reap_failed_daemon(pid_t child) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t r = ::waitpid(child, nullptr, WNOHANG);
    if (r == child || (r < 0 && errno != EINTR)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

int wait_ready(int fd, pid_t child) {
  std::string msg;
  char buf[512];
  pollfd p{fd, POLLIN, 0};
  // A mount that is not answering after two minutes is reported rather than waited for.
  constexpr int kTimeoutMs = 120'000;
  while (true) {
    int r = ::poll(&p, 1, kTimeoutMs);
    if (r == 0) {
      print_error("the mount did not become ready within 120 s (daemon pid " +
                  std::to_string(child) + ")");
      return kExitFailure;
    }
    if (r < 0 && errno == EINTR) continue;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    msg.append(buf, static_cast<size_t>(n));
  }
  if (msg == "0") return kExitOk;
  print_error(msg.empty() ? "the mount daemon exited before the mount was ready" : msg.substr(1));
  // A daemon that failed is on its way out (it reports before tearing down what it built):
  // the command returns once it is gone, so a refused mount leaves no process behind.
  reap_failed_daemon(child);
  return kExitFailure;
}

int run_in_background(const std::string& log_file, const std::function<int(int ready_fd)>& serve) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    print_error(std::string("pipe: ") + std::strerror(errno));
    return kExitFailure;
  }
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    print_error(std::string("fork: ") + std::strerror(errno));
    return kExitFailure;
  }
  if (pid > 0) {
    ::close(fds[1]);
    return wait_ready(fds[0], pid);
  }
  // The daemon: its own session, no terminal, logs to the file or syslog.
  ::close(fds[0]);
  ::setsid();
  if (::chdir("/") != 0) { /* the mountpoint is absolute; nothing depends on the cwd */
  }
  int null = ::open("/dev/null", O_RDWR);
  if (null >= 0) {
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    if (null > STDERR_FILENO) ::close(null);
  }
  if (log_file.empty()) log::use_syslog();
  ::_exit(serve(fds[1]));
}

}  // namespace warmfs::cli
