// What the two ways of serving a mount share (internal to src/fuse: it names libfuse's
// types): run_fuse (fuse/fuse_session.h) mounts and serves; run_fuse_on_fd (fuse/handover.h)
// serves a session its supervisor mounted. Both build libfuse's arguments from the mount's
// options, a session with warmfs's callbacks, and the same loop with its readiness check.
#pragma once

#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 314
#endif
#include <fuse_lowlevel.h>

#include <functional>
#include <string>
#include <vector>

#include "fuse/fuse_adapter.h"
#include "warmfs/result.h"

namespace warmfs {

// libfuse's arguments for a session of a mount with these options (fuse_session_args),
// freed with this object: fuse_session_new replaces them with a copy libfuse allocates.
class SessionArgs {
 public:
  explicit SessionArgs(const FuseOptions& options);
  ~SessionArgs() { fuse_opt_free_args(&args_); }
  SessionArgs(const SessionArgs&) = delete;
  SessionArgs& operator=(const SessionArgs&) = delete;
  fuse_args* get() { return &args_; }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> argv_;
  fuse_args args_;
};

// A session whose callbacks are warmfs's (fuse_adapter.h), with state as their userdata
// (it must outlive the session); null on failure.
fuse_session* new_session(SessionArgs& args, FuseCallbackState& state);

// Serves se until its loop ends (a signal, an unmount), with up to options.max_threads
// workers, each on a cloned descriptor when clone_fd. Calls on_ready once a stat of the
// mountpoint is answered (or with why it failed), and releases what the kernel left open
// when the loop ends. Returns 0 after a clean stop (the signal that ended it, or none).
int serve_session(fuse_session* se, FuseCallbackState& state, const FuseOptions& options,
                  bool clone_fd, const std::function<void(const Status&)>& on_ready);

}  // namespace warmfs
