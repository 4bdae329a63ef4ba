// The io_uring implementation of FileIo: a pool of rings, one synchronous request per ring.
#include <liburing.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/log.h"
#include "io/file_io.h"

namespace warmfs::io {
namespace {

struct Ring {
  std::mutex mu;  // protects ring: one request in flight at a time
  io_uring ring{};
};

class UringFileIo final : public FileIo {
 public:
  // Takes ownership of initialized rings.
  explicit UringFileIo(std::vector<std::unique_ptr<Ring>> rings) : rings_(std::move(rings)) {}
  ~UringFileIo() override {
    for (auto& r : rings_) io_uring_queue_exit(&r->ring);
  }

  Result<size_t> read_at(int fd, std::span<std::byte> out, uint64_t offset) override {
    size_t done = 0;
    while (done < out.size()) {
      const int res =
          submit(/*write=*/false, fd, out.data() + done, out.size() - done, offset + done);
      if (res == -EINTR || res == -EAGAIN) continue;
      if (res < 0) return errno_status(-res, "io_uring read");
      if (res == 0) break;  // end of file
      done += static_cast<size_t>(res);
    }
    return done;
  }

  Status write_at(int fd, std::span<const std::byte> data, uint64_t offset) override {
    size_t done = 0;
    while (done < data.size()) {
      // The cast drops const for the SQE's buffer pointer; a write only reads from it.
      auto* p = const_cast<std::byte*>(data.data() + done);
      const int res = submit(/*write=*/true, fd, p, data.size() - done, offset + done);
      if (res == -EINTR || res == -EAGAIN) continue;
      if (res < 0) return errno_status(-res, "io_uring write");
      if (res == 0) return Status(Errc::kIo, "io_uring write wrote nothing");
      done += static_cast<size_t>(res);
    }
    return Status::ok();
  }

  bool uses_io_uring() const override { return true; }

 private:
  // The ring this thread prefers; another one if that is busy and a free one exists.
  Ring& acquire(std::unique_lock<std::mutex>& lock) {
    const size_t home = std::hash<std::thread::id>{}(std::this_thread::get_id()) % rings_.size();
    for (size_t i = 0; i < rings_.size(); ++i) {
      Ring& r = *rings_[(home + i) % rings_.size()];
      std::unique_lock<std::mutex> l(r.mu, std::try_to_lock);
      if (l.owns_lock()) {
        lock = std::move(l);
        return r;
      }
    }
    Ring& r = *rings_[home];
    lock = std::unique_lock<std::mutex>(r.mu);
    return r;
  }

  // One read or write; returns the completion's res (bytes, or -errno).
  int submit(bool write, int fd, std::byte* buf, size_t len, uint64_t offset) {
    // One request moves at most 1 GiB, well inside the SQE's 32-bit length.
    const unsigned n = static_cast<unsigned>(std::min<size_t>(len, 1u << 30));
    std::unique_lock<std::mutex> lock;
    Ring& r = acquire(lock);
    io_uring_sqe* sqe = io_uring_get_sqe(&r.ring);
    if (sqe == nullptr) return -EAGAIN;
    if (write) {
      io_uring_prep_write(sqe, fd, buf, n, offset);
    } else {
      io_uring_prep_read(sqe, fd, buf, n, offset);
    }
    int rc = io_uring_submit(&r.ring);
    if (rc < 0) return rc;
    io_uring_cqe* cqe = nullptr;
    do {
      rc = io_uring_wait_cqe(&r.ring, &cqe);
    } while (rc == -EINTR);
    if (rc < 0) return rc;
    const int res = cqe->res;
    io_uring_cqe_seen(&r.ring, cqe);
    return res;
  }

  std::vector<std::unique_ptr<Ring>> rings_;  // fixed after construction
};

}  // namespace

std::unique_ptr<FileIo> make_file_io(const FileIoOptions& options) {
  if (options.force_posix) return make_posix_file_io();
  std::vector<std::unique_ptr<Ring>> rings;
  const uint32_t count = std::max<uint32_t>(1, options.rings);
  for (uint32_t i = 0; i < count; ++i) {
    auto r = std::make_unique<Ring>();
    const int rc = io_uring_queue_init(std::max<uint32_t>(1, options.queue_depth), &r->ring, 0);
    if (rc < 0) {
      for (auto& done : rings) io_uring_queue_exit(&done->ring);
      log::warn("io_uring unavailable ({}); the SSD cache uses pread/pwrite instead",
                errno_status(-rc, "io_uring_queue_init").message());
      return make_posix_file_io();
    }
    rings.push_back(std::move(r));
  }
  return std::make_unique<UringFileIo>(std::move(rings));
}

}  // namespace warmfs::io
