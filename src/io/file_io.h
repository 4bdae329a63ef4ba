// FileIo: synchronous positional reads and writes of local files, over io_uring when the
// kernel allows it, else over pread/pwrite.
//
// The SSD cache reads and writes whole chunk records in large region files. Each call is
// synchronous for its caller (submit one request, wait for its completion) and complete: a
// short read or write is continued until the span is done, so callers only ever see a short
// read at end of file. Errors come back as Status with the errno folded into the code
// (ENOSPC -> kNoSpace, EROFS -> kReadOnly, EACCES/EPERM -> kAccessDenied, others -> kIo).
//
// make_file_io() builds a pool of rings (one request in flight per ring; a caller takes the
// ring its thread hashes to, or any free one), so concurrent readers do not serialize on a
// single ring. If io_uring_queue_init fails (an old kernel, or io_uring blocked by seccomp in
// a container) it logs one warning and returns the pread/pwrite implementation instead.
// Only this folder includes liburing.
//
// Thread safe: every implementation may be called from any number of threads at once.
// The FileIo interface is also the test seam: tests wrap it to inject I/O errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "warmfs/result.h"

namespace warmfs::io {

class FileIo {
 public:
  virtual ~FileIo() = default;
  // Reads up to out.size() bytes of fd at offset; returns the bytes read, fewer than
  // out.size() only when end of file came first (0 at or past it).
  virtual Result<size_t> read_at(int fd, std::span<std::byte> out, uint64_t offset) = 0;
  // Writes all of data to fd at offset (extending the file as needed).
  virtual Status write_at(int fd, std::span<const std::byte> data, uint64_t offset) = 0;
  // True when requests go through io_uring, false for the pread/pwrite fallback.
  virtual bool uses_io_uring() const = 0;
};

struct FileIoOptions {
  // Rings in the pool: each carries one request at a time, so this is the I/O concurrency.
  // 8 covers the FUSE threads that hit the SSD at once plus the background writer.
  uint32_t rings = 8;
  // Submission queue entries per ring; one request is in flight per ring, 4 leaves room.
  uint32_t queue_depth = 4;
  // Skip io_uring and use pread/pwrite (for tests and for --no-io-uring style escapes).
  bool force_posix = false;
};

// The io_uring pool, or the pread/pwrite fallback when io_uring cannot be set up.
std::unique_ptr<FileIo> make_file_io(const FileIoOptions& options = {});
// The pread/pwrite implementation alone.
std::unique_ptr<FileIo> make_posix_file_io();

// A Status for a failed system call: "<what>: <strerror>" with the errno's Errc.
Status errno_status(int err, const std::string& what);

// An owned file descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

}  // namespace warmfs::io
