// Memory of Metadata per entry of a large tree, walked as `ls -lR` does (a listing of every
// directory and a lookup of every entry): what the nodes, the name index and the listings
// cost; and walked as `find` does (a listing of every directory, lookups of directories only:
// the kernel is given names only, docs/posix.md#listings), what the listings alone cost. The
// whole measure is hidden ([.memory]): it prints, for docs/benchmark-misses.md; run it with
//   build/tests/warmfs_unit_tests "[.memory]" -s
// (100,000 files; WARMFS_MEMORY_TEST_DIRS=1000 for a million). The budget of a looked-up file
// is checked in every run.
#include <fmt/format.h>
#include <malloc.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "meta/listing_index.h"
#include "meta/metadata.h"
#include "support/fake_clock.h"
#include "support/memory_object_store.h"

using namespace warmfs;
using namespace std::chrono_literals;

namespace {

// Which attributes the objects carry.
enum class Stored { kNone, kRcloneStyle };

// Bytes per entry on top of its name.
// Directories of 1,000 files in the hidden case's tree: 100, or WARMFS_MEMORY_TEST_DIRS (1000
// for a million files).
int tree_dirs() {
  const char* env = std::getenv("WARMFS_MEMORY_TEST_DIRS");
  return env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 100;
}

double measure_tree(bool object_attrs, Stored stored = Stored::kNone, bool lookup_files = true,
                    int dirs = tree_dirs()) {
  FakeClock clock;
  MemoryObjectStore bucket{"b", clock};
  constexpr int kFiles = 1000;
  uint64_t name_bytes = 0;
  for (int d = 0; d < dirs; ++d) {
    for (int f = 0; f < kFiles; ++f) {
      const std::string name = fmt::format("img{:07d}.jpg", d * kFiles + f);
      name_bytes += name.size();
      const std::string key = fmt::format("class{:03d}/{}", d, name);
      bucket.put_object(key, "x");
      // As rclone uploads: the same mode and owner on every object, each its own mtime.
      if (stored == Stored::kRcloneStyle) {
        bucket.set_metadata(key, {{"mode", "33188"},
                                  {"uid", "1000"},
                                  {"gid", "1000"},
                                  {"mtime", fmt::format("{}.5", 1'600'000'000 + d * kFiles + f)}});
      }
    }
  }
  MetaOptions o;
  o.ttl = 1h;
  o.object_attrs = object_attrs;
  malloc_trim(0);
  // In use from the heap, and in blocks of their own (mmap: glibc serves allocations past its
  // threshold, 128 KiB at first, so: hash tables' arrays, the node slab's index).
  auto in_use = [] {
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
  };
  const size_t before = in_use();
  size_t entries = 0;
  {
    auto meta = std::make_unique<Metadata>(bucket, clock, o);
    auto root = meta->list(kRootIno);
    REQUIRE(root.is_ok());
    for (const DirEntry& d : (*root)->entries) {
      auto dir = meta->lookup(kRootIno, d.name);
      REQUIRE(dir.is_ok());
      auto l = meta->list(dir->ino);
      REQUIRE(l.is_ok());
      for (const DirEntry& e : (*l)->entries) {
        if (lookup_files) REQUIRE(meta->lookup(dir->ino, e.name).is_ok());
        ++entries;
      }
    }
    const size_t after = in_use();
    const double per_entry = static_cast<double>(after - before) / static_cast<double>(entries);
    const double name = static_cast<double>(name_bytes) / static_cast<double>(entries);
    WARN(fmt::format(
        "{}attributes {}{}: {} entries: {:.0f} bytes each, names {:.0f} bytes: "
        "{:.0f} bytes on top",
        lookup_files ? "" : "files listed, not looked up: ", object_attrs ? "on" : "off",
        stored == Stored::kRcloneStyle ? ", objects with rclone's metadata" : "", entries,
        per_entry, name, per_entry - name));
    CHECK(entries == static_cast<size_t>(dirs) * kFiles);
    return per_entry - name;
  }
}

}  // namespace

// Attributes off: the nodes, the name index and the listings alone. On (the mount's default):
// with what each object's HEAD said kept by path besides (metadata_attrs.cc), for objects
// with no attributes and for objects that each carry their own (rclone's uploads).
TEST_CASE("metadata bytes per entry of a large tree", "[.memory]") {
  measure_tree(false);
  measure_tree(true);
  measure_tree(true, Stored::kRcloneStyle);
  measure_tree(false, Stored::kNone, /*lookup_files=*/false);
}

// The budget docs/architecture.md gives a looked-up file of a large tree: 150 bytes on top of
// its name. Not under AddressSanitizer, whose allocator mallinfo2() does not see.
#ifndef __SANITIZE_ADDRESS__
TEST_CASE("a looked-up file of a large tree costs under 150 bytes on top of its name", "[meta]") {
  CHECK(measure_tree(false, Stored::kNone, true, 100) < 150);
}
#endif

TEST_CASE("listing index value of 100,000 files: size and decode time", "[.memory]") {
  std::vector<DirEntry> entries;
  for (int i = 0; i < 100'000; ++i) {
    entries.push_back(DirEntry{fmt::format("img{:07d}.jpg", i), false, 100'000 + uint64_t(i) * 7,
                               1704067200 + i, "\"0123456789abcdef0123456789abcdef\""});
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string v = encode_listing(entries, 1);
  const auto t1 = std::chrono::steady_clock::now();
  auto back = decode_listing(v);
  const auto t2 = std::chrono::steady_clock::now();
  REQUIRE(back);
  CHECK(back->entries.size() == entries.size());
  using ms = std::chrono::duration<double, std::milli>;
  WARN(fmt::format("{} bytes ({:.1f} per entry); encode {:.1f} ms, decode {:.1f} ms", v.size(),
                   double(v.size()) / 1e5, ms(t1 - t0).count(), ms(t2 - t1).count()));
}
