#include "upload/staged_object.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <future>
#include <random>
#include <thread>

#include "cache/memory_cache.h"
#include "support/fake_clock.h"
#include "support/fault_injecting_store.h"
#include "support/memory_object_store.h"
#include "support/temp_dir.h"
#include "support/wait.h"
#include "upload/staging.h"

namespace warmfs {
namespace {

constexpr uint64_t kMiB = 1 << 20;
using Op = FaultInjectingStore::Op;

std::vector<std::byte> bytes_of(size_t n, uint32_t seed) {
  std::vector<std::byte> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = std::byte(rng() & 0xff);
  return v;
}

struct Fixture {
  FakeClock clock;
  MemoryObjectStore bucket{"b", clock};
  FaultInjectingStore store{bucket};
  MemoryCache cache{MemoryCacheOptions{256 << 20, 16}};
  testing::TempDir tmp{"warmfs-staging-test"};
  std::string dir = tmp.path;
  std::unique_ptr<StagingArea> staging;
  std::unique_ptr<Uploader> uploader;

  Fixture() {
    staging = StagingArea::open(dir, store).value();
    UploaderOptions o;
    o.bucket = "b";
    o.plan = PartPlan(5 * kMiB);
    o.single_put_max = 5 * kMiB;
    o.threads = 2;
    uploader = std::make_unique<Uploader>(store, *staging, &cache, clock, o);
  }
  ~Fixture() {
    uploader.reset();
    staging.reset();
  }
  std::vector<std::byte> in_bucket(const std::string& key) {
    return bucket.object_bytes(key).value_or(std::vector<std::byte>{});
  }
};

}  // namespace

TEST_CASE("staged object: a small file is one PUT at flush, and nothing before", "[upload]") {
  Fixture f;
  auto obj = f.uploader->make("small");
  REQUIRE(obj->stage_empty().is_ok());
  auto data = bytes_of(1000, 1);
  REQUIRE(obj->write(0, data).is_ok());
  CHECK(obj->dirty());
  CHECK(f.bucket.object_count() == 0);
  auto r = obj->flush();
  REQUIRE(r.is_ok());
  CHECK(r->size == 1000);
  CHECK(f.in_bucket("small") == data);
  CHECK(f.store.call_count(Op::kPut) == 1);
  CHECK_FALSE(obj->dirty());
  // Nothing changed: a second flush sends nothing.
  REQUIRE(obj->flush().is_ok());
  CHECK(f.store.call_count(Op::kPut) == 1);
}

TEST_CASE("staged object: a sequential writer's parts go up before flush, which sends the tail",
          "[upload]") {
  Fixture f;
  auto obj = f.uploader->make("big");
  REQUIRE(obj->stage_empty().is_ok());
  auto data = bytes_of(23 * kMiB + 7, 2);
  for (size_t off = 0; off < data.size(); off += kMiB) {
    const size_t n = std::min<size_t>(kMiB, data.size() - off);
    REQUIRE(obj->write(off, std::span(data).subspan(off, n)).is_ok());
  }
  // Parts 1..4 (5 MiB each) are full and behind the writer: they upload in the background.
  testing::eventually([&] { return f.store.call_count(Op::kUploadPart) >= 4; });
  CHECK(f.store.call_count(Op::kUploadPart) == 4);
  CHECK(f.bucket.object_count() == 0);  // nothing visible before complete
  auto r = obj->flush();
  REQUIRE(r.is_ok());
  CHECK(f.store.call_count(Op::kUploadPart) == 5);
  CHECK(f.store.call_count(Op::kCompleteMultipart) == 1);
  CHECK(f.in_bucket("big") == data);
  CHECK(f.bucket.upload_count() == 0);
}

TEST_CASE("staged object: a failed part makes flush fail, aborts the upload, and a retry succeeds",
          "[upload]") {
  Fixture f;
  auto obj = f.uploader->make("k");
  REQUIRE(obj->stage_empty().is_ok());
  auto data = bytes_of(12 * kMiB, 3);
  f.store.fail_always(Op::kUploadPart, Status(Errc::kIo, "500 InternalError"));
  REQUIRE(obj->write(0, data).is_ok());
  auto r = obj->flush();
  CHECK(r.code() == Errc::kIo);
  CHECK(f.bucket.object_count() == 0);
  CHECK(f.bucket.upload_count() == 0);  // aborted: no orphaned parts
  CHECK(f.uploader->counters().upload_failures == 1);
  CHECK(obj->dirty());
  f.store.clear_faults();
  REQUIRE(obj->flush().is_ok());
  CHECK(f.in_bucket("k") == data);
  CHECK(f.bucket.upload_count() == 0);
}

TEST_CASE("staged object: an abort that fails is tried again after the next upload", "[upload]") {
  Fixture f;
  auto obj = f.uploader->make("k");
  REQUIRE(obj->stage_empty().is_ok());
  f.store.fail_always(Op::kUploadPart, Status(Errc::kIo, "500 InternalError"));
  f.store.fail_always(Op::kAbortMultipart, Status(Errc::kIo, "500 InternalError"));
  REQUIRE(obj->write(0, bytes_of(12 * kMiB, 4)).is_ok());
  CHECK(obj->flush().code() == Errc::kIo);
  CHECK(f.bucket.upload_count() == 1);  // the abort failed: its parts are still there
  CHECK(f.staging->failed_aborts() == 1);
  f.store.clear_faults();
  auto other = f.uploader->make("other");
  REQUIRE(other->stage_empty().is_ok());
  REQUIRE(other->write(0, bytes_of(1000, 5)).is_ok());
  REQUIRE(other->flush().is_ok());
  testing::eventually([&] { return f.bucket.upload_count() == 0; });
  CHECK(f.staging->failed_aborts() == 0);
}

TEST_CASE(
    "staged object: an abort still failing is tried when the mount ends, else left to the "
    "next mount",
    "[upload]") {
  for (const bool heals : {true, false}) {
    INFO("the bucket answers again before the end: " << heals);
    Fixture f;
    {
      auto obj = f.uploader->make("k");
      REQUIRE(obj->stage_empty().is_ok());
      f.store.fail_always(Op::kUploadPart, Status(Errc::kIo, "500 InternalError"));
      f.store.fail_always(Op::kAbortMultipart, Status(Errc::kIo, "500 InternalError"));
      REQUIRE(obj->write(0, bytes_of(12 * kMiB, 6)).is_ok());
      CHECK(obj->flush().code() == Errc::kIo);
      CHECK(obj->flush().code() == Errc::kIo);
    }
    CHECK(f.bucket.upload_count() >= 1);
    if (heals) f.store.clear_faults();
    f.uploader.reset();
    f.staging.reset();
    if (heals) {
      CHECK(f.bucket.upload_count() == 0);
    } else {
      REQUIRE(f.bucket.upload_count() >= 1);
      f.store.clear_faults();
      auto next = StagingArea::open(f.dir, f.store);  // the next mount on this staging dir
      REQUIRE(next.is_ok());
      CHECK(f.bucket.upload_count() == 0);
    }
  }
}

TEST_CASE("staged object: a failing CompleteMultipartUpload is a failure, never reported durable",
          "[upload]") {
  Fixture f;
  auto obj = f.uploader->make("k");
  REQUIRE(obj->stage_empty().is_ok());
  auto data = bytes_of(11 * kMiB, 4);
  REQUIRE(obj->write(0, data).is_ok());
  f.store.fail_next(Op::kCompleteMultipart, 1, Status(Errc::kIo, "InternalError in a 200 answer"));
  CHECK_FALSE(obj->flush().is_ok());
  CHECK(f.bucket.object_count() == 0);
  CHECK(f.bucket.upload_count() == 0);
  REQUIRE(obj->flush().is_ok());
  CHECK(f.in_bucket("k") == data);
}

TEST_CASE("staged object: random writes, truncates and rewrites of uploaded parts match a shadow",
          "[upload]") {
  Fixture f;
  auto obj = f.uploader->make("rw");
  REQUIRE(obj->stage_empty().is_ok());
  std::vector<std::byte> shadow;
  std::mt19937 rng(9);
  for (int step = 0; step < 120; ++step) {
    const uint32_t op = rng() % 10;
    if (op < 6) {
      const size_t off = rng() % (shadow.size() + 3 * kMiB);
      auto data = bytes_of(1 + rng() % (3 * kMiB), static_cast<uint32_t>(step));
      REQUIRE(obj->write(off, data).is_ok());
      if (shadow.size() < off + data.size()) shadow.resize(off + data.size());
      std::copy(data.begin(), data.end(), shadow.begin() + static_cast<ptrdiff_t>(off));
    } else if (op < 8) {
      const size_t size = rng() % (shadow.size() + kMiB + 1);
      REQUIRE(obj->truncate(size).is_ok());
      shadow.resize(size);
    } else {
      REQUIRE(obj->flush().is_ok());
      REQUIRE(f.in_bucket("rw") == shadow);
    }
    REQUIRE(obj->size() == shadow.size());
    std::vector<std::byte> back(shadow.size());
    REQUIRE(obj->read(0, back).is_ok());
    REQUIRE(back == shadow);
  }
  REQUIRE(obj->flush().is_ok());
  CHECK(f.in_bucket("rw") == shadow);
  CHECK(f.bucket.upload_count() == 0);
}

TEST_CASE("staged object: staged from the old object, changed, uploaded whole", "[upload]") {
  Fixture f;
  auto old = bytes_of(7 * kMiB, 5);
  f.bucket.put_object("m", old);
  auto obj = f.uploader->make("m");
  REQUIRE(obj->stage_from(old.size(),
                          [&](uint64_t off, std::span<std::byte> out) -> Result<size_t> {
                            std::copy_n(old.begin() + static_cast<ptrdiff_t>(off), out.size(),
                                        out.begin());
                            return out.size();
                          })
              .is_ok());
  CHECK_FALSE(obj->dirty());  // staging alone is no change
  const std::string tail = "appended";
  REQUIRE(obj->write(old.size(), std::as_bytes(std::span(tail))).is_ok());
  REQUIRE(obj->flush().is_ok());
  auto want = old;
  for (char c : tail) want.push_back(std::byte(c));
  CHECK(f.in_bucket("m") == want);
}

TEST_CASE("staged object: write-through puts the chunks in the cache under the new ETag",
          "[upload]") {
  Fixture f;
  auto obj = f.uploader->make("wt");
  REQUIRE(obj->stage_empty().is_ok());
  auto data = bytes_of(3 * kMiB + 5, 6);
  REQUIRE(obj->write(0, data).is_ok());
  auto info = obj->flush();
  REQUIRE(info.is_ok());
  std::atomic<bool> done{false};
  obj->write_through(*info, [&] { done = true; });
  REQUIRE(testing::eventually([&] { return done.load(); }));
  for (uint64_t i = 0; i < 4; ++i) {
    auto c = f.cache.get(ChunkKey{"b", "wt", info->etag, i});
    REQUIRE(c != nullptr);
    const size_t off = i * kMiB;
    CHECK(std::equal(c->bytes.begin(), c->bytes.end(), data.begin() + static_cast<ptrdiff_t>(off)));
    CHECK(chunk_intact(*c));
  }
}

TEST_CASE("staged object: discard aborts the open upload and uploads nothing", "[upload]") {
  Fixture f;
  auto obj = f.uploader->make("gone");
  REQUIRE(obj->stage_empty().is_ok());
  REQUIRE(obj->write(0, bytes_of(16 * kMiB, 7)).is_ok());
  testing::eventually([&] { return f.store.call_count(Op::kUploadPart) >= 2; });
  obj->discard();
  CHECK_FALSE(obj->dirty());
  REQUIRE(obj->flush().is_ok());
  CHECK(f.bucket.object_count() == 0);
  CHECK(f.bucket.upload_count() == 0);
}

TEST_CASE("staged object: discard while the multipart upload is being created does not hang",
          "[upload]") {
  Fixture f;
  f.store.set_delay(Op::kCreateMultipart, std::chrono::milliseconds(300));
  auto obj = f.uploader->make("doomed");
  REQUIRE(obj->stage_empty().is_ok());
  REQUIRE(obj->write(0, bytes_of(16 * kMiB, 8)).is_ok());
  REQUIRE(testing::eventually([&] { return f.store.call_count(Op::kCreateMultipart) > 0; }));
  REQUIRE(f.store.call_count(Op::kCreateMultipart) == 1);
  // The upload being created sees the discard when CreateMultipartUpload answers. A deadlock
  // here would hang the whole run, so discard runs on its own thread and a hang aborts loudly.
  std::promise<void> done;
  auto finished = done.get_future();
  std::thread([&obj, &done] {
    obj->discard();
    done.set_value();
  }).detach();
  if (finished.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    FAIL_CHECK("discard() did not return within 20 s");
    std::abort();
  }
  REQUIRE(obj->flush().is_ok());
  CHECK(f.bucket.object_count() == 0);
  CHECK(f.bucket.upload_count() == 0);
}

TEST_CASE("staged object: a part uploaded while the file was shorter goes up again when it grows",
          "[upload]") {
  // A part queued while the file was long is read after a truncate made it short (the
  // CreateMultipartUpload before it is slow); a write far past the end then makes the file
  // long again. That part must not go into the object at its short length (S3 refuses a
  // non-last part under 5 MiB, and the bytes would be wrong anyway).
  Fixture f;
  f.store.set_delay(Op::kCreateMultipart, std::chrono::milliseconds(300));
  auto obj = f.uploader->make("grown");
  REQUIRE(obj->stage_empty().is_ok());
  std::vector<std::byte> shadow = bytes_of(7 * kMiB, 21);
  REQUIRE(obj->write(0, shadow).is_ok());  // part 1 is full and behind the writer: queued
  for (int i = 0; i < 400 && f.store.call_count(Op::kCreateMultipart) == 0; ++i) ::usleep(1000);
  REQUIRE(f.store.call_count(Op::kCreateMultipart) == 1);
  REQUIRE(obj->truncate(3 * kMiB).is_ok());  // while the upload is being created
  shadow.resize(3 * kMiB);
  const auto mid = bytes_of(kMiB, 22);
  REQUIRE(obj->write(3 * kMiB + kMiB / 2, mid).is_ok());
  shadow.resize(3 * kMiB + kMiB / 2);
  shadow.insert(shadow.end(), mid.begin(), mid.end());
  // The queued part goes up, read at the file's short length.
  for (int i = 0; i < 5000 && f.store.call_count(Op::kUploadPart) == 0; ++i) ::usleep(1000);
  REQUIRE(f.store.call_count(Op::kUploadPart) == 1);
  for (int i = 0; i < 5000 && f.store.in_flight() != 0; ++i) ::usleep(1000);
  REQUIRE(f.store.in_flight() == 0);
  const auto tail = bytes_of(kMiB, 23);
  REQUIRE(obj->write(12 * kMiB, tail).is_ok());
  shadow.resize(12 * kMiB);
  shadow.insert(shadow.end(), tail.begin(), tail.end());
  auto r = obj->flush();
  REQUIRE(r.is_ok());
  CHECK(f.in_bucket("grown") == shadow);
}

TEST_CASE("staging area: a dead mount's open uploads are aborted by the next one", "[upload]") {
  Fixture f;
  auto id = f.bucket.create_multipart("orphan");
  REQUIRE(id.is_ok());
  // A journal as a killed mount leaves it: started, never ended, and not locked.
  const std::string journal = f.dir + "/journal-999999.log";
  {
    FILE* j = std::fopen(journal.c_str(), "w");
    std::fprintf(j, "B %s %s\n", id->c_str(), "6f727068616e");  // hex of "orphan"
    std::fclose(j);
  }
  CHECK(f.bucket.upload_count() == 1);
  auto again = StagingArea::open(f.dir, f.store);
  REQUIRE(again.is_ok());
  CHECK((*again)->recovered_uploads() == 1);
  CHECK(f.bucket.upload_count() == 0);
  CHECK_FALSE(std::filesystem::exists(journal));
}

}  // namespace warmfs
