// warmfs prefetch MOUNT --order FILE (publish an order) and warmfs stats MOUNT --epochs.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "common/sizes.h"
#include "fs/filesystem.h"
#include "fs/order_file.h"
#include "warmfs/control_ioctl.h"

namespace warmfs::cli {
namespace {

bool is_mount(const std::string& mountpoint) {
  char probe[16];
  return ::getxattr(mountpoint.c_str(), kPidXattr, probe, sizeof probe) >= 0;
}

// Writes all of text to fd; false with errno set on failure.
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Publishes text through the order file's ioctls (warmfs/control_ioctl.h), on a descriptor
// opened read-only; false after printing why it failed.
bool publish_by_ioctl(const std::string& control, const std::string& text) {
  const int fd = ::open(control.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    print_error("cannot open " + control + ": " + std::strerror(errno));
    return false;
  }
  auto chunk = std::make_unique<warmfs_order_chunk>();
  int err = 0;
  for (size_t off = 0; off < text.size() && err == 0; off += WARMFS_ORDER_CHUNK_BYTES) {
    chunk->length =
        static_cast<uint32_t>(std::min<size_t>(WARMFS_ORDER_CHUNK_BYTES, text.size() - off));
    std::memcpy(chunk->bytes, text.data() + off, chunk->length);
    if (::ioctl(fd, WARMFS_IOC_ORDER_APPEND, chunk.get()) != 0) err = errno;
  }
  if (err == 0 && ::ioctl(fd, WARMFS_IOC_ORDER_PUBLISH) != 0) err = errno;
  ::close(fd);
  if (err != 0) {
    print_error("the mount refused the order: " + std::string(std::strerror(err)) +
                (err == ENOTTY ? " (this warmfs mount has no ioctl channel: remount it, or mount "
                                 "it without --read-only)"
                               : " (its log says why)"));
    return false;
  }
  return true;
}

}  // namespace

int run_publish_order(const std::string& mountpoint, const std::string& order_file) {
  if (!is_mount(mountpoint)) {
    print_error(mountpoint + " is not a warmfs mount");
    return kExitFailure;
  }
  std::string text;
  if (order_file == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(order_file, std::ios::binary);
    if (!in) {
      print_error("cannot read " + order_file + ": " + std::strerror(errno));
      return kExitFailure;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  // A list of paths without the header is taken as the current version's entries.
  const bool headed = text.compare(0, kOrderHeader.size(), kOrderHeader) == 0 &&
                      (text.size() == kOrderHeader.size() || text[kOrderHeader.size()] == '\n' ||
                       text[kOrderHeader.size()] == '\r');
  if (!headed) text = std::string(kOrderHeader) + "\n" + text;
  Result<std::vector<OrderEntry>> entries = parse_order(text);
  if (!entries.is_ok()) {
    // Line numbers of the file as given (the header was added in front).
    print_error(order_file + ": " + entries.status().message() +
                (headed ? "" : " (counting a header line added in front)"));
    return kExitFailure;
  }
  const std::string control =
      mountpoint + "/" + std::string(kControlDirName) + "/" + std::string(kOrderFileName);
  const int fd = ::open(control.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0 && errno == EROFS) {
    // Held read-only by the kernel: the same text goes through the ioctl channel.
    if (!publish_by_ioctl(control, text)) return kExitFailure;
    std::printf("published an order of %zu entries\n", entries->size());
    return kExitOk;
  }
  if (fd < 0) {
    print_error("cannot open " + control + ": " + std::strerror(errno));
    return kExitFailure;
  }
  const bool wrote = write_all(fd, text);
  const int write_err = errno;
  const int closed = ::close(fd);  // the order is taken here
  const int close_err = errno;
  if (!wrote || closed != 0) {
    print_error("the mount refused the order: " +
                std::string(std::strerror(!wrote ? write_err : close_err)) + " (its log says why)");
    return kExitFailure;
  }
  std::printf("published an order of %zu entries\n", entries->size());
  return kExitOk;
}

int run_epochs(const std::string& mountpoint, bool json) {
  std::string buf(256 * 1024, '\0');
  const ssize_t n = ::getxattr(mountpoint.c_str(), kStatsXattr, buf.data(), buf.size());
  if (n < 0) {
    const int err = errno;
    print_error(err == ENODATA || err == ENOTSUP
                    ? mountpoint + " is not a warmfs mount"
                    : "cannot read stats of " + mountpoint + ": " + std::strerror(err));
    return kExitFailure;
  }
  buf.resize(static_cast<size_t>(n));
  const auto j = nlohmann::json::parse(buf, nullptr, false);
  if (!j.is_object() || !j.contains("epochs") || !j["epochs"].is_array()) {
    print_error(mountpoint + ": this warmfs does not report epochs");
    return kExitFailure;
  }
  const auto& epochs = j["epochs"];
  if (json) {
    std::printf("%s\n", epochs.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%-6s %-14s %9s %8s %10s %9s %6s %6s %6s %11s %9s\n", "epoch", "kind", "seconds",
              "samples", "samples/s", "stall s", "mem", "disk", "local", "from bucket", "GETs");
  for (const auto& e : epochs) {
    std::string kind = e.value("kind", "?");
    if (kind == "order") kind += " " + std::to_string(e.value("order", uint64_t{0}));
    if (e.value("running", false)) kind += "*";
    const auto& h = e["hit_ratio"];
    std::printf(
        "%-6llu %-14s %9.1f %8llu %10.1f %9.2f %5.0f%% %5.0f%% %5.0f%% %11s %9llu\n",
        (unsigned long long)e.value("epoch", uint64_t{0}), kind.c_str(), e.value("seconds", 0.0),
        (unsigned long long)e.value("samples", uint64_t{0}), e.value("samples_per_second", 0.0),
        e.value("stall_seconds", 0.0), 100 * h.value("memory", 0.0), 100 * h.value("disk", 0.0),
        100 * h.value("local", 0.0), format_size(e.value("bucket_bytes", uint64_t{0})).c_str(),
        (unsigned long long)e.value("bucket_gets", uint64_t{0}));
  }
  std::printf("(* running; samples are order entries read, or files opened in an interval)\n");
  return kExitOk;
}

}  // namespace warmfs::cli
