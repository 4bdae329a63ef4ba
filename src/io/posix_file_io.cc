#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/file_io.h"

namespace warmfs::io {
namespace {

class PosixFileIo final : public FileIo {
 public:
  Result<size_t> read_at(int fd, std::span<std::byte> out, uint64_t offset) override {
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n =
          ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return errno_status(errno, "pread");
      }
      if (n == 0) break;  // end of file
      done += static_cast<size_t>(n);
    }
    return done;
  }

  Status write_at(int fd, std::span<const std::byte> data, uint64_t offset) override {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n =
          ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return errno_status(errno, "pwrite");
      }
      if (n == 0) return Status(Errc::kIo, "pwrite wrote nothing");
      done += static_cast<size_t>(n);
    }
    return Status::ok();
  }

  bool uses_io_uring() const override { return false; }
};

}  // namespace

std::unique_ptr<FileIo> make_posix_file_io() { return std::make_unique<PosixFileIo>(); }

Status errno_status(int err, const std::string& what) {
  Errc code = Errc::kIo;
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      code = Errc::kNoSpace;
      break;
    case EROFS:
      code = Errc::kReadOnly;
      break;
    case EINVAL:  // for a file, an O_DIRECT request the file system or device refuses
      code = Errc::kInvalidArgument;
      break;
    case EACCES:
    case EPERM:
      code = Errc::kAccessDenied;
      break;
    case ENOENT:
      code = Errc::kNotFound;
      break;
    case EEXIST:
      code = Errc::kExists;
      break;
    default:
      break;
  }
  return Status(code, what + ": " + std::strerror(err));
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

}  // namespace warmfs::io
