// WriteFixture: a read-write Filesystem over an in-memory bucket (behind a fault-injecting
// store), a fake clock and a staging directory, for the core's write tests.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cache/memory_cache.h"
#include "fs/filesystem.h"
#include "support/fake_clock.h"
#include "support/fault_injecting_store.h"
#include "support/memory_object_store.h"
#include "support/temp_dir.h"
#include "upload/staging.h"

namespace warmfs {

using Op = FaultInjectingStore::Op;

struct WriteFixture {
  FakeClock clock;
  MemoryObjectStore bucket{"b", clock};
  FaultInjectingStore store{bucket};
  MemoryCache memory{MemoryCacheOptions{64 << 20, 16}};
  testing::TempDir tmp{"warmfs-fs-write-test"};
  std::string dir = tmp.path;
  std::unique_ptr<StagingArea> staging;
  std::unique_ptr<Uploader> uploader;
  std::unique_ptr<ReadPath> read_path;
  std::unique_ptr<Metadata> meta;
  std::unique_ptr<Filesystem> fs;

  explicit WriteFixture(bool read_only = false, MetaOptions mo = {}) {
    staging = StagingArea::open(dir, store).value();
    UploaderOptions uo;
    uo.bucket = "b";
    uploader = std::make_unique<Uploader>(store, *staging, &memory, clock, uo);
    ReadaheadOptions ro;
    ro.fetch_threads = 2;
    read_path = std::make_unique<ReadPath>(store, memory, "b", ro);
    meta = std::make_unique<Metadata>(store, clock, mo);
    FsOptions fo;
    fo.bucket = "b";
    fo.read_only = read_only;
    fs = std::make_unique<Filesystem>(*meta, *read_path, memory, nullptr, store, clock, fo,
                                      uploader.get());
  }
  ~WriteFixture() {
    fs.reset();
    uploader.reset();
    staging.reset();
  }
  std::string object(const std::string& key) {
    auto b = bucket.object_bytes(key);
    if (!b) return "<absent>";
    return std::string(reinterpret_cast<const char*>(b->data()), b->size());
  }
  Result<size_t> write(FileHandle& h, uint64_t off, std::string_view s) {
    return fs->write(h, off, std::as_bytes(std::span(s)));
  }
  std::vector<std::string> names(uint64_t dir_ino) {
    auto l = fs->opendir(dir_ino);
    REQUIRE(l.is_ok());
    std::vector<std::string> out;
    for (auto& e : (*l)->entries) out.push_back(e.name);
    return out;
  }
};

}  // namespace warmfs
