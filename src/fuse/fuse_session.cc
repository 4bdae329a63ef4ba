// The life of a mount (fuse/fuse_session.h): the session, the mount, the kernel read-ahead,
// the readiness check, the loop, and the unmount; the session and loop that restartable
// mounts share (fuse/session_loop.h).
#define FUSE_USE_VERSION 314
#include "fuse/fuse_session.h"

#include <fuse_lowlevel.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/mountinfo.h"
#include "fuse/session_loop.h"

namespace warmfs {

void raise_read_ahead(const FuseOptions& options) {
  const auto mount = top_mount_at(read_mountinfo(), options.mountpoint);
  if (!mount) return;
  const std::string path = "/sys/class/bdi/" + mount->device + "/read_ahead_kb";
  std::ofstream out(path);
  out << options.read_ahead_kb;
  out.flush();
  if (!out) log::info("could not raise kernel read-ahead ({}): reads go at 128 KiB", path);
}

std::vector<std::string> fuse_session_args(const FuseOptions& options) {
  std::string mount_opts = "fsname=" + options.fsname + ",subtype=warmfs,default_permissions";
  mount_opts += ",max_read=" + std::to_string(options.max_request_bytes);
  if (options.read_only) mount_opts += ",ro";
  if (options.allow_other) mount_opts += ",allow_other";
  return {"warmfs", "-o", mount_opts};
}

SessionArgs::SessionArgs(const FuseOptions& options) : strings_(fuse_session_args(options)) {
  for (auto& a : strings_) argv_.push_back(a.data());
  args_ = FUSE_ARGS_INIT(static_cast<int>(argv_.size()), argv_.data());
}

fuse_session* new_session(SessionArgs& args, FuseCallbackState& state) {
  fuse_lowlevel_ops ops{};
  fill_fuse_ops(ops);
  return fuse_session_new(args.get(), &ops, sizeof ops, &state);
}

int serve_session(fuse_session* se, FuseCallbackState& state, const FuseOptions& options,
                  bool clone_fd, const std::function<void(const Status&)>& on_ready) {
  // Report readiness once the mount answers: a stat of the root is served by the loop.
  std::thread ready([&options, &on_ready] {
    struct stat st {};
    if (::stat(options.mountpoint.c_str(), &st) == 0) {
      on_ready(Status::ok());
    } else {
      on_ready(
          Status(Errc::kIo, std::string("the mount does not answer: ") + std::strerror(errno)));
    }
  });
  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(cfg, clone_fd ? 1 : 0);
  fuse_loop_cfg_set_max_threads(cfg, options.max_threads);
  fuse_loop_cfg_set_idle_threads(cfg, std::min(options.max_threads, 8u));
  const int rc = fuse_session_loop_mt(se, cfg);
  fuse_loop_cfg_destroy(cfg);
  ready.join();
  release_open_handles(state);
  // The loop returns the number of the signal that ended it: a requested, clean stop.
  const bool clean = rc == 0 || rc == SIGTERM || rc == SIGINT || rc == SIGHUP;
  return clean ? 0 : 1;
}

int run_fuse(Filesystem& fs, const FuseOptions& options,
             const std::function<void(const Status&)>& on_ready) {
  SessionArgs args(options);
  FuseCallbackState state{fs, options};
  fuse_session* se = new_session(args, state);
  if (se == nullptr) {
    on_ready(Status(Errc::kInternal, "cannot create the FUSE session"));
    return 1;
  }
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_session_destroy(se);
    on_ready(Status(Errc::kInternal, "cannot install signal handlers"));
    return 1;
  }
  if (fuse_session_mount(se, options.mountpoint.c_str()) != 0) {
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    on_ready(
        Status(Errc::kIo, "cannot mount on " + options.mountpoint +
                              " (is /dev/fuse there, and the mountpoint an empty directory?)"));
    return 1;
  }
  raise_read_ahead(options);
  const int rc = serve_session(se, state, options, /*clone_fd=*/true, on_ready);
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  return rc;
}

Status unmount_path(const std::string& path) {
  if (::umount2(path.c_str(), 0) == 0) return Status::ok();
  const int err = errno;
  if (err == EINVAL) return Status(Errc::kInvalidArgument, path + " is not a mount point");
  if (err == EBUSY) return Status(Errc::kIo, path + " is busy (a process has files open there)");
  if (err != EPERM)
    return Status(Errc::kIo, std::string("cannot unmount ") + path + ": " + std::strerror(err));
  // Not root: the setuid helper unmounts mounts the user made.
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execlp("fusermount3", "fusermount3", "-u", path.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int wstatus = 0;
  if (pid < 0 || ::waitpid(pid, &wstatus, 0) < 0 || !WIFEXITED(wstatus) ||
      WEXITSTATUS(wstatus) != 0) {
    return Status(Errc::kIo, "fusermount3 -u " + path + " failed");
  }
  return Status::ok();
}

}  // namespace warmfs
