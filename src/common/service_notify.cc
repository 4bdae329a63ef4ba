#include "common/service_notify.h"

#include <systemd/sd-daemon.h>

#include <string>

namespace warmfs::service {
namespace {

void send(std::string message, std::string_view status) {
  if (!status.empty()) {
    message += "\nSTATUS=";
    message += status;
  }
  // Failures (no socket, a manager gone) change nothing for the daemon: it runs either way.
  sd_notify(0, message.c_str());
}

}  // namespace

void notify_ready(std::string_view status) { send("READY=1", status); }

void notify_stopping(std::string_view status) { send("STOPPING=1", status); }

void notify_status(std::string_view status) {
  if (!status.empty()) sd_notify(0, ("STATUS=" + std::string(status)).c_str());
}

}  // namespace warmfs::service
