// A Filesystem core over an in-memory bucket, with no kernel: the one fixture of the core's
// tests (tests/unit/fs). The bucket is seen through a fault-injecting store, time through a
// fake clock; with `writable`, files written go to a staging area in a temporary directory and
// are uploaded by a real Uploader. What differs between tests (the metadata's TTL, read-ahead
// threads, the core's owner or read-only flag, the uploader's part plan) is given in the
// options of each layer, which start from the defaults below.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/memory_cache.h"
#include "fs/filesystem.h"
#include "support/fake_clock.h"
#include "support/fault_injecting_store.h"
#include "support/memory_object_store.h"
#include "support/temp_dir.h"
#include "upload/staging.h"

namespace warmfs::testing {

struct FsFixtureOptions {
  std::string prefix;     // the mount's prefix in the bucket ("" or "a/b/"): metadata's and core's
  bool writable = false;  // with a staging area and an uploader
  // Each layer's options. The fixture sets the bucket ("b") and the prefix in them.
  MetaOptions meta{.ttl = std::chrono::seconds(5)};
  ReadaheadOptions readahead{.fetch_threads = 4};
  UploaderOptions upload = UploaderOptions();  // used when writable
  // Files and directories show uid 1000, gid 100. Without an uploader the core refuses writes
  // whatever read_only says; with one, read_only stands for --read-only.
  FsOptions fs{.uid = 1000, .gid = 100, .read_only = false};
};

struct FsFixture {
  FakeClock clock;
  MemoryObjectStore bucket{"b", clock};
  FaultInjectingStore store{bucket};
  MemoryCache memory{MemoryCacheOptions{64 << 20, 16}};
  TempDir tmp{"warmfs-fs-test"};
  std::unique_ptr<StagingArea> staging;
  std::unique_ptr<Uploader> uploader;
  std::unique_ptr<ReadPath> read_path;
  std::unique_ptr<Metadata> meta;
  std::unique_ptr<Filesystem> fs;

  explicit FsFixture(FsFixtureOptions o = {}) {
    if (o.writable) {
      staging = StagingArea::open(tmp.path, store).value();
      o.upload.bucket = "b";
      uploader = std::make_unique<Uploader>(store, *staging, &memory, clock, o.upload);
    }
    read_path = std::make_unique<ReadPath>(store, memory, "b", o.readahead);
    o.meta.prefix = o.prefix;
    meta = std::make_unique<Metadata>(store, clock, o.meta);
    o.fs.bucket = "b";
    o.fs.prefix = o.prefix;
    fs = std::make_unique<Filesystem>(*meta, *read_path, memory, nullptr, store, clock, o.fs,
                                      uploader.get());
  }
  // The core goes before the uploader it hands files to, and that before its staging area.
  ~FsFixture() {
    fs.reset();
    uploader.reset();
    staging.reset();
  }
  FsFixture(const FsFixture&) = delete;
  FsFixture& operator=(const FsFixture&) = delete;

  // The bucket's bytes at key, or "<absent>".
  std::string object(const std::string& key) {
    auto b = bucket.object_bytes(key);
    if (!b) return "<absent>";
    return std::string(reinterpret_cast<const char*>(b->data()), b->size());
  }
  Result<size_t> write(FileHandle& h, uint64_t off, std::string_view s) {
    return fs->write(h, off, std::as_bytes(std::span(s)));
  }
  // Resolves "a/b/c" from the root with lookups, as the kernel would.
  Result<Attr> resolve(const std::string& path) {
    uint64_t ino = kRootIno;
    Result<Attr> attr = fs->getattr(kRootIno);
    size_t start = 0;
    while (start <= path.size()) {
      size_t slash = path.find('/', start);
      std::string name =
          path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
      attr = fs->lookup(ino, name);
      if (!attr.is_ok()) return attr;
      ino = attr->ino;
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    return attr;
  }
  // The names a directory lists, in its order.
  std::vector<std::string> names(uint64_t dir_ino) {
    auto l = fs->opendir(dir_ino);
    REQUIRE(l.is_ok());
    auto entries = (*l)->read_all();
    REQUIRE(entries.is_ok());
    std::vector<std::string> out;
    for (auto& e : *entries) out.push_back(e.name.str());
    return out;
  }
};

}  // namespace warmfs::testing
