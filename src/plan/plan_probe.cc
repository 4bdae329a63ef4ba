#include "plan/plan_probe.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <thread>

#include "io/file_io.h"

namespace warmfs::plan {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<std::byte, FreeDeleter>;

AlignedBuffer aligned(size_t bytes) {
  const size_t n = (std::max<size_t>(bytes, 1) + 4095) / 4096 * 4096;
  return AlignedBuffer(static_cast<std::byte*>(std::aligned_alloc(4096, n)));
}

}  // namespace

Result<BucketProbe> probe_bucket(ObjectStore& store, const std::vector<ProbeObject>& objects,
                                 uint32_t inflight, double seconds, uint64_t max_request_bytes) {
  if (objects.empty()) return Status(Errc::kInvalidArgument, "no objects to probe");
  BucketProbe out;
  out.inflight = std::max<uint32_t>(inflight, 1);
  // First byte: small GETs one at a time; the median.
  {
    std::vector<double> times;
    std::vector<std::byte> small(4096);
    for (size_t i = 0; i < 7; ++i) {
      const ProbeObject& o = objects[i % objects.size()];
      const size_t n = static_cast<size_t>(std::min<uint64_t>(o.size, small.size()));
      if (n == 0) continue;
      const auto t0 = Clock::now();
      auto got = store.get_range(o.key, 0, std::span(small.data(), n), "");
      if (!got.is_ok()) return got.status();
      times.push_back(since(t0));
    }
    if (!times.empty()) {
      std::sort(times.begin(), times.end());
      out.first_byte_sec = times[times.size() / 2];
    }
  }
  // The burst: `inflight` threads taking the objects in turn until the time is up.
  std::atomic<uint64_t> next{0}, requests{0}, bytes{0};
  std::mutex mu;
  Status failed = Status::ok();
  const uint64_t min_requests = out.inflight;  // one round, however slow the bucket
  const auto start = Clock::now();
  auto worker = [&] {
    AlignedBuffer buf;
    size_t cap = 0;
    for (;;) {
      const uint64_t i = next.fetch_add(1);
      if (i >= min_requests && since(start) >= seconds) return;
      {
        std::lock_guard lock(mu);
        if (!failed.is_ok()) return;
      }
      const ProbeObject& o = objects[i % objects.size()];
      const size_t n = static_cast<size_t>(std::min(o.size, max_request_bytes));
      if (n == 0) continue;
      if (cap < n) {
        buf = aligned(n);
        cap = n;
      }
      auto got = store.get_range(o.key, 0, std::span(buf.get(), n), "");
      if (!got.is_ok()) {
        std::lock_guard lock(mu);
        if (failed.is_ok()) failed = got.status();
        return;
      }
      requests.fetch_add(1);
      bytes.fetch_add(*got);
    }
  };
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < out.inflight; ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  if (!failed.is_ok()) return failed;
  out.seconds = since(start);
  out.requests = requests.load();
  out.bytes = bytes.load();
  if (out.seconds > 0) {
    out.requests_per_sec = static_cast<double>(out.requests) / out.seconds;
    out.bytes_per_sec = static_cast<double>(out.bytes) / out.seconds;
  }
  return out;
}

Result<DiskProbe> probe_disk(const std::string& dir, uint64_t bytes, uint64_t read_block_bytes) {
  constexpr uint64_t kBlock = 1ull << 20;
  DiskProbe out;
  out.bytes = std::max<uint64_t>(bytes / kBlock, 1) * kBlock;
  out.read_block_bytes =
      std::clamp<uint64_t>((read_block_bytes + 4095) / 4096 * 4096, 4096, 2 * kBlock);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = dir + "/.warmfs-plan-probe." + std::to_string(::getpid());
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EINVAL) {
    out.direct = false;
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  }
  if (fd < 0) return io::errno_status(errno, "cache dir " + dir);
  io::UniqueFd file(fd);
  struct Remove {
    std::string p;
    ~Remove() { ::unlink(p.c_str()); }
  } remove{path};
  std::unique_ptr<io::FileIo> fio = io::make_file_io();
  AlignedBuffer block = aligned(kBlock);
  std::mt19937_64 rng(7);
  for (uint64_t i = 0; i < kBlock / 8; ++i) reinterpret_cast<uint64_t*>(block.get())[i] = rng();
  const auto w0 = Clock::now();
  for (uint64_t off = 0; off < out.bytes; off += kBlock) {
    Status s = fio->write_at(fd, std::span<const std::byte>(block.get(), kBlock), off);
    if (!s.is_ok()) return Status(s.code(), "cache dir " + dir + ": " + s.message());
  }
  if (::fdatasync(fd) != 0) return io::errno_status(errno, "cache dir " + dir + ": fdatasync");
  out.write_bytes_per_sec = static_cast<double>(out.bytes) / std::max(since(w0), 1e-9);

  constexpr int kReaders = 8;
  const uint64_t reads = out.bytes / out.read_block_bytes;
  const uint64_t slots = (out.bytes - out.read_block_bytes) / 4096 + 1;
  std::atomic<uint64_t> next{0};
  std::mutex mu;
  Status failed = Status::ok();
  const auto r0 = Clock::now();
  auto reader = [&](int seed) {
    AlignedBuffer buf = aligned(out.read_block_bytes);
    std::mt19937_64 pick(static_cast<uint64_t>(seed) + 11);
    while (next.fetch_add(1) < reads) {
      const uint64_t off = pick() % slots * 4096;
      auto got = fio->read_at(fd, std::span(buf.get(), out.read_block_bytes), off);
      if (!got.is_ok()) {
        std::lock_guard lock(mu);
        failed = got.status();
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kReaders; ++t) threads.emplace_back(reader, t);
  for (std::thread& t : threads) t.join();
  if (!failed.is_ok()) return Status(failed.code(), "cache dir " + dir + ": " + failed.message());
  out.read_bytes_per_sec =
      static_cast<double>(reads * out.read_block_bytes) / std::max(since(r0), 1e-9);
  return out;
}

}  // namespace warmfs::plan
