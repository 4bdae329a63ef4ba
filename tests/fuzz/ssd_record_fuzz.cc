// What the SSD cache reads back after a crash: an index value (decode_index_entry,
// cache/ssd_index.h) and the region file bytes it points at (ssd_record.h). The input is an
// index value (its first 37 bytes) then the region file. Every outcome must be "valid" or
// "corrupt": no crash, no read outside the file, and "valid" only for what the code wrote.
// The first byte also picks a second check: a record the code writes from the region bytes
// is intact, and stops being intact when any byte but the trailer's padding changes.
#include <cstring>

#include "cache/ssd_index.h"
#include "cache/ssd_record.h"
#include "common/crc32c.h"
#include "fuzz_util.h"

using namespace warmfs;

namespace {

constexpr size_t kValueBytes = 37;
constexpr std::string_view kKey =
    "bucket\0key\0etag\0"
    "0";

void check_written(std::span<const std::byte> data, uint64_t gen, size_t flip_at) {
  const ssd_record::Fields f{static_cast<uint32_t>(data.size()), crc32c(data),
                             ssd_record::key_crc(kKey), gen};
  std::vector<std::byte> rec(data.begin(), data.end());
  const ssd_record::Trailer t = ssd_record::encode(f);
  rec.insert(rec.end(), t.begin(), t.end());
  FUZZ_CHECK(ssd_record::intact(rec, f));
  FUZZ_CHECK(ssd_record::fits(0, f.length, rec.size(), rec.size()));
  const size_t checked = rec.size() - 4;  // the trailer's last four bytes are padding
  rec[flip_at % checked] ^= std::byte{0x01};
  FUZZ_CHECK(!ssd_record::intact(rec, f));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view value = fuzz::as_view(data, std::min(size, kValueBytes));
  const auto* file_begin = reinterpret_cast<const std::byte*>(data) + value.size();
  // A copy of exactly the file's bytes, so ASan sees any read past its end.
  const std::vector<std::byte> file(file_begin, file_begin + (size - value.size()));

  const std::optional<SsdIndexEntry> e = decode_index_entry(value);
  if (!e) {
    FUZZ_CHECK(value.size() != kValueBytes || value[0] != 1);
  } else {
    FUZZ_CHECK(encode_index_entry(*e) == value);
    const uint64_t region_bytes = file.size();
    if (ssd_record::fits(e->offset, e->length, file.size(), region_bytes)) {
      const unsigned __int128 end =
          static_cast<unsigned __int128>(e->offset) + e->length + ssd_record::kTrailerBytes;
      FUZZ_CHECK(end <= file.size());
      const std::span<const std::byte> read = std::span(file).subspan(e->offset);
      const ssd_record::Fields want{e->length, e->crc32c, ssd_record::key_crc(kKey), e->gen};
      if (ssd_record::intact(read, want)) {
        FUZZ_CHECK(crc32c(read.first(e->length)) == e->crc32c);
      }
    }
  }
  if (size > 0 && (data[0] & 1) == 0) {
    check_written(file, e ? e->gen : size, size > 1 ? data[1] * 257u + size : 0);
  }
  return 0;
}
