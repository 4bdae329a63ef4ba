#include "fs/filesystem.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "support/fs_fixture.h"
#include "support/wait.h"

using namespace warmfs;
using namespace std::chrono_literals;

namespace {

std::string random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

struct Fixture : testing::FsFixture {
  explicit Fixture(std::string prefix = "")
      : FsFixture(testing::FsFixtureOptions{.prefix = prefix}) {}

  std::string read_all(FileHandle& h, uint64_t size, size_t piece) {
    std::string out;
    std::vector<std::byte> buf(piece);
    for (uint64_t off = 0;; off += piece) {
      auto n = fs->read(h, off, buf);
      REQUIRE(n.is_ok());
      out.append(reinterpret_cast<const char*>(buf.data()), *n);
      if (*n < piece) break;
    }
    CHECK(out.size() == size);
    return out;
  }

  // Puts data at key and looks it up; returns its inode.
  uint64_t put_and_resolve(const std::string& key, const std::string& data) {
    bucket.put_object(key, data);
    auto a = resolve(key);
    REQUIRE(a.is_ok());
    return a->ino;
  }

  // Opens ino and reads it whole in 1 MiB pieces, as a sequential reader does.
  void read_file(uint64_t ino, uint64_t size) {
    auto h = fs->open(ino, O_RDONLY);
    REQUIRE(h.is_ok());
    read_all(*h->handle, size, 1 << 20);
  }
};

}  // namespace

TEST_CASE("attributes carry the configured owner and modes", "[fs]") {
  Fixture f;
  f.bucket.put_object("d/file", "12345");
  auto d = f.resolve("d");
  REQUIRE(d.is_ok());
  CHECK(d->mode == (S_IFDIR | 0755));
  auto file = f.resolve("d/file");
  REQUIRE(file.is_ok());
  CHECK(file->mode == (S_IFREG | 0644));
  CHECK(file->size == 5);
  CHECK(file->uid == 1000);
  CHECK(file->gid == 100);
  CHECK(f.resolve("d/none").code() == Errc::kNotFound);
}

TEST_CASE("reads are byte-exact at every offset, length and piece size", "[fs]") {
  Fixture f;
  const std::string data = random_bytes(3 * kDefaultChunkSize + 12345, 7);
  f.bucket.put_object("big", data);
  f.bucket.put_object("empty", "");
  auto attr = f.resolve("big");
  REQUIRE(attr.is_ok());
  auto opened = f.fs->open(attr->ino, O_RDONLY);
  REQUIRE(opened.is_ok());
  for (size_t piece : {4096ul, 131072ul, 1048576ul, 999999ul}) {
    CHECK(f.read_all(*opened->handle, data.size(), piece) == data);
  }
  std::mt19937 rng(1);
  std::vector<std::byte> buf(3 << 20);
  for (int i = 0; i < 200; ++i) {
    const uint64_t off = rng() % (data.size() + 100);
    const size_t len = 1 + rng() % (2 << 20);
    auto n = f.fs->read(*opened->handle, off, std::span(buf.data(), len));
    REQUIRE(n.is_ok());
    const size_t expect = off >= data.size() ? 0 : std::min<size_t>(len, data.size() - off);
    REQUIRE(*n == expect);
    REQUIRE(std::memcmp(buf.data(), data.data() + std::min<uint64_t>(off, data.size()), expect) ==
            0);
  }
  auto e = f.resolve("empty");
  REQUIRE(e.is_ok());
  auto eh = f.fs->open(e->ino, O_RDONLY);
  REQUIRE(eh.is_ok());
  CHECK(f.read_all(*eh->handle, 0, 4096).empty());
}

TEST_CASE("without an uploader, writes are refused with kReadOnly", "[fs]") {
  Fixture f;
  f.bucket.put_object("a", "1");
  auto a = f.resolve("a");
  REQUIRE(a.is_ok());
  CHECK(f.fs->open(a->ino, O_WRONLY).code() == Errc::kReadOnly);
  CHECK(f.fs->open(a->ino, O_RDWR).code() == Errc::kReadOnly);
  CHECK(f.fs->open(a->ino, O_RDONLY | O_TRUNC).code() == Errc::kReadOnly);
  CHECK(f.fs->check_writable().code() == Errc::kReadOnly);
}

TEST_CASE("keep_cache only while the ETag is unchanged", "[fs]") {
  Fixture f;
  f.bucket.put_object("obj", "version one");
  auto a = f.resolve("obj");
  REQUIRE(a.is_ok());
  auto first = f.fs->open(a->ino, O_RDONLY);
  REQUIRE(first.is_ok());
  CHECK_FALSE(first->keep_cache);
  auto second = f.fs->open(a->ino, O_RDONLY);
  REQUIRE(second.is_ok());
  CHECK(second->keep_cache);

  f.bucket.put_object("obj", "version two, longer");
  // The open handle keeps its version: its reads fail rather than mix versions.
  std::vector<std::byte> buf(64);
  f.memory.clear();
  CHECK(f.fs->read(*second->handle, 0, buf).code() == Errc::kPreconditionFailed);

  f.clock.advance(6s);  // past the metadata TTL
  auto third = f.fs->open(a->ino, O_RDONLY);
  REQUIRE(third.is_ok());
  CHECK_FALSE(third->keep_cache);
  CHECK(f.read_all(*third->handle, 19, 4096) == "version two, longer");
  auto attr = f.fs->getattr(a->ino);
  REQUIRE(attr.is_ok());
  CHECK(attr->size == 19);
}

TEST_CASE("stats JSON has the documented keys and counts bucket bytes once", "[fs]") {
  Fixture f;
  const std::string data = random_bytes(2 * kDefaultChunkSize, 3);
  const uint64_t ino = f.put_and_resolve("x", data);
  f.read_file(ino, data.size());
  // The cold pass waited for the bucket for every byte: none of it came from memory.
  CHECK(nlohmann::json::parse(f.fs->stats_json())["memory_hit_bytes"].get<uint64_t>() == 0);
  f.read_file(ino, data.size());
  auto j = nlohmann::json::parse(f.fs->stats_json());
  CHECK(j["bytes_read"].get<uint64_t>() == 2 * data.size());
  CHECK(j["bucket_bytes_read"].get<uint64_t>() == data.size());
  CHECK(j["memory_hit_bytes"].get<uint64_t>() == data.size());
  CHECK(j["bucket_requests"].contains("get"));
  CHECK(j["bucket_requests"].contains("head"));
  CHECK(j["bucket_requests"].contains("list"));
  CHECK(j["read_latency_us"].contains("p50"));
  CHECK(j["read_latency_us"].contains("p99"));
  auto x = f.fs->getxattr(kRootIno, kStatsXattr);
  REQUIRE(x.is_ok());
  CHECK(nlohmann::json::parse(*x).contains("bytes_read"));
  CHECK(f.fs->getxattr(ino, kStatsXattr).code() == Errc::kNotFound);
  // Other user attributes do not exist; other namespaces are not supported at all, which tools
  // such as ls remember per file system instead of asking for every file.
  CHECK(f.fs->getxattr(ino, "user.other").code() == Errc::kNotFound);
  CHECK(f.fs->getxattr(ino, "security.selinux").code() == Errc::kNotSupported);
  CHECK(f.fs->getxattr(kRootIno, "system.posix_acl_access").code() == Errc::kNotSupported);
}

TEST_CASE("memory_hit_bytes counts the bytes served, not the chunks they came from", "[fs]") {
  Fixture f;
  const std::string data = random_bytes(4 * kDefaultChunkSize, 4);
  const uint64_t ino = f.put_and_resolve("x", data);
  f.read_file(ino, data.size());
  const auto before = nlohmann::json::parse(f.fs->stats_json());
  auto h = f.fs->open(ino, O_RDONLY);
  REQUIRE(h.is_ok());
  std::mt19937_64 rng(5);
  std::vector<std::byte> buf(4096);
  constexpr int kReads = 64;
  for (int i = 0; i < kReads; ++i) {
    const uint64_t off = (rng() % (data.size() / 4096)) * 4096;
    auto n = f.fs->read(*h->handle, off, buf);
    REQUIRE(n.is_ok());
    REQUIRE(*n == buf.size());
    CHECK(std::memcmp(buf.data(), data.data() + off, buf.size()) == 0);
  }
  const auto after = nlohmann::json::parse(f.fs->stats_json());
  const auto delta = [&](const char* k) {
    return after[k].get<uint64_t>() - before[k].get<uint64_t>();
  };
  CHECK(delta("bytes_read") == kReads * 4096);
  CHECK(delta("memory_hit_bytes") == kReads * 4096);
  CHECK(delta("bucket_bytes_read") == 0);
}

TEST_CASE("a failing bucket gives an error, then recovers", "[fs]") {
  Fixture f;
  f.bucket.put_object("x", random_bytes(100000, 5));
  auto a = f.resolve("x");
  REQUIRE(a.is_ok());
  auto h = f.fs->open(a->ino, O_RDONLY);
  REQUIRE(h.is_ok());
  f.store.fail_next(FaultInjectingStore::Op::kGetRange, 1, Status(Errc::kIo, "500 InternalError"));
  std::vector<std::byte> buf(4096);
  CHECK(f.fs->read(*h->handle, 0, buf).code() == Errc::kIo);
  auto n = f.fs->read(*h->handle, 0, buf);
  REQUIRE(n.is_ok());
  CHECK(*n == 4096);
}

// A randomized reference-model test: random trees, random walks of lookups, listings and
// reads, each checked against the plain map of keys that made the tree.
TEST_CASE("model: the core agrees with a map of keys", "[fs][model]") {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    Fixture f;
    std::mt19937 rng(seed);
    std::map<std::string, std::string> model;  // path -> bytes, files only
    const char* names[] = {"a", "b", "c", "data", "x.bin"};
    for (int i = 0; i < 30; ++i) {
      std::string path;
      const int depth = 1 + rng() % 3;
      for (int d = 0; d < depth; ++d)
        path += (d ? "/" : "") + std::string(names[rng() % 5]) + std::to_string(d);
      bool clash = false;  // keep files and directories apart, as a model of a clean bucket
      for (auto& [k, v] : model) {
        if (k.rfind(path + "/", 0) == 0 || path.rfind(k + "/", 0) == 0) clash = true;
      }
      if (clash) continue;
      model[path] = random_bytes(rng() % (3 * kDefaultChunkSize), seed * 100 + i);
      f.bucket.put_object(path, model[path]);
    }
    for (auto& [path, bytes] : model) {
      auto attr = f.resolve(path);
      REQUIRE(attr.is_ok());
      REQUIRE_FALSE(attr->is_dir);
      REQUIRE(attr->size == bytes.size());
      auto h = f.fs->open(attr->ino, O_RDONLY);
      REQUIRE(h.is_ok());
      std::vector<std::byte> buf(1 << 20);
      for (int r = 0; r < 5; ++r) {
        const uint64_t off = bytes.empty() ? 0 : rng() % bytes.size();
        const size_t len = 1 + rng() % buf.size();
        auto n = f.fs->read(*h->handle, off, std::span(buf.data(), len));
        REQUIRE(n.is_ok());
        const size_t expect = std::min<size_t>(len, bytes.size() - off);
        REQUIRE(*n == expect);
        REQUIRE(std::memcmp(buf.data(), bytes.data() + off, expect) == 0);
      }
    }
    // Every directory's listing is exactly the next path segments of the model's keys.
    std::map<std::string, std::set<std::string>> dirs;
    for (auto& [path, bytes] : model) {
      std::string parent;
      size_t start = 0;
      while (true) {
        size_t slash = path.find('/', start);
        std::string seg =
            path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        dirs[parent].insert(seg + (slash == std::string::npos ? "" : "/"));
        if (slash == std::string::npos) break;
        parent = path.substr(0, slash);
        start = slash + 1;
      }
    }
    for (auto& [dir, expect] : dirs) {
      uint64_t ino = kRootIno;
      if (!dir.empty()) {
        auto a = f.resolve(dir);
        REQUIRE(a.is_ok());
        REQUIRE(a->is_dir);
        ino = a->ino;
      }
      auto l = f.fs->opendir(ino);
      REQUIRE(l.is_ok());
      std::set<std::string> got;
      auto entries = (*l)->read_all();
      REQUIRE(entries.is_ok());
      for (auto& e : *entries) got.insert(e.name.str() + (e.is_dir ? "/" : ""));
      REQUIRE(got == expect);
    }
  }
}

namespace warmfs {

TEST_CASE("small files opened in listing order warm the ones after them", "[fs]") {
  Fixture f;
  for (int i = 0; i < 40; ++i)
    f.bucket.put_object(fmt::format("d/f{:02}", i), std::string(1000, char('a' + i % 26)));
  auto d = f.resolve("d");
  REQUIRE(d.is_ok());
  REQUIRE(f.fs->opendir(d->ino).is_ok());  // the listing, as a directory walk has it
  for (int i = 0; i < 3; ++i) {
    auto a = f.fs->lookup(d->ino, fmt::format("f{:02}", i));
    REQUIRE(a.is_ok());
    REQUIRE(f.fs->open(a->ino, O_RDONLY).is_ok());
  }
  // The third open in order starts fetches of the files after it, none of them opened yet.
  testing::eventually(
      [&] { return f.store.get_count("d/f20") > 0 && f.store.get_count("d/f39") > 0; });
  CHECK(f.store.get_count("d/f20") == 1);
  CHECK(f.store.get_count("d/f39") == 1);
  CHECK(f.store.get_count("d/f00") == 0);  // opened, never read: nothing fetched for it
}

TEST_CASE("files opened out of order warm nothing", "[fs]") {
  Fixture f;
  for (int i = 0; i < 100; ++i) f.bucket.put_object(fmt::format("d/f{:03}", i), "x");
  auto d = f.resolve("d");
  REQUIRE(d.is_ok());
  REQUIRE(f.fs->opendir(d->ino).is_ok());
  for (int i : {90, 10, 50, 70, 30}) {
    auto a = f.fs->lookup(d->ino, fmt::format("f{:03}", i));
    REQUIRE(a.is_ok());
    REQUIRE(f.fs->open(a->ino, O_RDONLY).is_ok());
  }
  // The decision to warm is made inside open() and counted there, before any fetch starts:
  // no waiting is needed to see that none was made.
  CHECK(nlohmann::json::parse(f.fs->stats_json())["readahead"]["warmed_files"].get<uint64_t>() ==
        0);
  CHECK(f.store.call_count(FaultInjectingStore::Op::kGetRange) == 0);
}

}  // namespace warmfs
