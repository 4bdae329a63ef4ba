// A Filesystem core over an in-memory bucket, with no kernel: the fixture of the core's tests
// (tests/unit/fs). The bucket is seen through a fault-injecting store, time through a fake
// clock; with `writable`, files written go to a staging area in a temporary directory and
// are uploaded by a real Uploader.
#pragma once

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
  std::string prefix;          // the mount's prefix in the bucket ("" or "a/b/")
  bool writable = false;       // with a staging area and an uploader
  bool read_only = false;      // --read-only
  uint32_t fetch_threads = 4;  // the read path's
  std::chrono::milliseconds meta_ttl = std::chrono::seconds(5);
  uint32_t uid = 1000, gid = 100;  // shown for every file
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

  explicit FsFixture(const FsFixtureOptions& o = {}) {
    if (o.writable) {
      staging = StagingArea::open(tmp.path, store).value();
      UploaderOptions uo;
      uo.bucket = "b";
      uploader = std::make_unique<Uploader>(store, *staging, &memory, clock, uo);
    }
    ReadaheadOptions ro;
    ro.fetch_threads = o.fetch_threads;
    read_path = std::make_unique<ReadPath>(store, memory, "b", ro);
    MetaOptions mo;
    mo.prefix = o.prefix;
    mo.ttl = o.meta_ttl;
    meta = std::make_unique<Metadata>(store, clock, mo);
    FsOptions fo;
    fo.bucket = "b";
    fo.prefix = o.prefix;
    fo.uid = o.uid;
    fo.gid = o.gid;
    fo.read_only = o.read_only;
    fs = std::make_unique<Filesystem>(*meta, *read_path, memory, nullptr, store, clock, fo,
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
};

}  // namespace warmfs::testing
