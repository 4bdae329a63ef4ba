#include "io/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.h"
#include "support/test_data.h"

using namespace warmfs;

namespace {

// A file under a fresh temp dir, removed with it.
struct TempFile {
  testing::TempDir dir{"warmfs-io-test"};
  std::string path = dir.path + "/f";
  io::UniqueFd fd{::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)};
};

std::unique_ptr<io::FileIo> make(bool uring) {
  return io::make_file_io({.rings = 2, .queue_depth = 4, .force_posix = !uring});
}

}  // namespace

TEST_CASE("make_file_io uses io_uring where the kernel allows it", "[io]") {
  auto io = io::make_file_io();
  WARN("io_uring in use: " << (io->uses_io_uring() ? "yes" : "no (pread/pwrite fallback)"));
  CHECK_FALSE(io::make_file_io({.force_posix = true})->uses_io_uring());
}

TEST_CASE("file io writes and reads back, short only at end of file", "[io]") {
  const bool uring = GENERATE(true, false);
  INFO("io_uring requested: " << uring);
  TempFile f;
  REQUIRE(f.fd.valid());
  auto io = make(uring);
  const auto data = random_bytes(300000, 7);
  REQUIRE(io->write_at(f.fd.get(), data, 4096).is_ok());
  CHECK(::lseek(f.fd.get(), 0, SEEK_END) == 4096 + 300000);

  std::vector<std::byte> back(300000);
  auto n = io->read_at(f.fd.get(), back, 4096);
  REQUIRE(n.is_ok());
  CHECK(*n == back.size());
  CHECK(back == data);

  // The hole before the data reads as zeros.
  std::vector<std::byte> hole(4096, std::byte{1});
  REQUIRE(*io->read_at(f.fd.get(), hole, 0) == 4096);
  CHECK(hole == std::vector<std::byte>(4096, std::byte{0}));

  // Past the end: a short read, then nothing.
  std::vector<std::byte> tail(1000);
  auto t = io->read_at(f.fd.get(), tail, 4096 + 300000 - 100);
  REQUIRE(t.is_ok());
  CHECK(*t == 100);
  CHECK(std::equal(tail.begin(), tail.begin() + 100, data.end() - 100));
  auto past = io->read_at(f.fd.get(), tail, 10'000'000);
  REQUIRE(past.is_ok());
  CHECK(*past == 0);
  // An empty span is a no-op.
  CHECK(*io->read_at(f.fd.get(), std::span<std::byte>(), 0) == 0);
  CHECK(io->write_at(f.fd.get(), std::span<const std::byte>(), 0).is_ok());
}

TEST_CASE("file io reports errors as statuses", "[io]") {
  const bool uring = GENERATE(true, false);
  TempFile f;
  auto io = make(uring);
  std::vector<std::byte> buf(16);
  auto r = io->read_at(-1, buf, 0);
  CHECK_FALSE(r.is_ok());
  io::UniqueFd ro(::open(f.path.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(ro.valid());
  Status w = io->write_at(ro.get(), buf, 0);
  CHECK_FALSE(w.is_ok());
  CHECK(w.code() == Errc::kIo);  // EBADF
  CHECK(io::errno_status(ENOSPC, "x").code() == Errc::kNoSpace);
  CHECK(io::errno_status(EROFS, "x").code() == Errc::kReadOnly);
  CHECK(io::errno_status(EACCES, "x").code() == Errc::kAccessDenied);
}

TEST_CASE("file io serves many threads at once", "[io]") {
  const bool uring = GENERATE(true, false);
  TempFile f;
  auto io = make(uring);
  constexpr size_t kBlock = 65536;
  constexpr int kThreads = 6;
  for (int i = 0; i < kThreads; ++i) {
    REQUIRE(io->write_at(f.fd.get(), random_bytes(kBlock, i), uint64_t(i) * kBlock).is_ok());
  }
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      const auto want = random_bytes(kBlock, i);
      std::vector<std::byte> got(kBlock);
      for (int round = 0; round < 50; ++round) {
        auto n = io->read_at(f.fd.get(), got, uint64_t(i) * kBlock);
        if (!n.is_ok() || *n != kBlock || got != want) bad.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(bad.load() == 0);
}
