// The mount daemon's process: its settings, and the readiness pipe between the command that
// starts a mount in the background and the daemon that serves it.
//
// Without --foreground, `warmfs mount` forks: the child becomes the daemon (its own session,
// no terminal) and reports on a pipe once the mount answers ("0") or why it failed
// ("1<message>"); the parent waits for that message and exits with the matching status, so
// a script that runs `warmfs mount` finds the files there when it returns.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>

#include "warmfs/result.h"

namespace warmfs::cli {

// The process settings of a mount's daemon and of a cache server: files it creates (the SSD
// tier's index and regions) are private, it may hold one descriptor per SSD region, and its
// malloc arenas are capped (common/heap.h). Its caller keeps a HeapTrimmer while it serves.
void prepare_process();

// How often a daemon gives the free pages of its malloc heap back to the system.
inline constexpr std::chrono::seconds kHeapTrimInterval{10};

// Readiness message from the serving child to the waiting parent: "0" or "1<message>".
// Closes fd; nothing when fd < 0 (in the foreground).
void send_ready(int fd, const Status& st);

// Waits for the child's readiness message; returns the exit status for the parent. After a
// failure, also waits (up to 10 s) for the child to exit.
int wait_ready(int fd, pid_t child);

// Forks: the parent waits for the child's readiness and returns its exit status; the child
// detaches (setsid, cwd /, stdio on /dev/null, logs to syslog unless log_file is set), runs
// serve(ready_fd) and exits with what it returns.
int run_in_background(const std::string& log_file, const std::function<int(int ready_fd)>& serve);

}  // namespace warmfs::cli
