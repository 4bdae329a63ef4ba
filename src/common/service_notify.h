// Readiness and stop notices to the service manager (systemd units of Type=notify), through
// sd_notify(3). The only code that includes libsystemd.
//
// Each call sends one datagram to $NOTIFY_SOCKET and does nothing when that variable is unset
// (a mount from a shell, a test, mount(8)), so callers need not know how they were started.
// Callers notify only from the process systemd started (warmfs mount --foreground, warmfs
// serve); a mount daemonised in the background says nothing. Thread safe: each call is one
// sendmsg.
#pragma once

#include <string_view>

namespace warmfs::service {

// "READY=1", with an optional STATUS= line shown by systemctl status: the mount answers, or
// the server listens.
void notify_ready(std::string_view status = {});

// "STOPPING=1": a stop was asked for (SIGTERM, SIGINT, unmount); the process is finishing.
void notify_stopping(std::string_view status = {});

// "STATUS=...": a one-line state for systemctl status.
void notify_status(std::string_view status);

}  // namespace warmfs::service
