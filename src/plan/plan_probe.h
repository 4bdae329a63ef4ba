// The short measurements `warmfs plan` makes before its arithmetic (plan_model.h): the
// bucket's first-byte latency and its rate with many requests in flight, through warmfs's own
// S3 client (an ObjectStore), and the local disk's write and read rates in a directory, through
// the FileIo the SSD tier uses (O_DIRECT, as the SSD tier writes and reads its records).
//
// What it does not do: model anything; it only times requests. The bucket is read, never
// written; the disk probe writes one temporary file in the directory and removes it.
//
// Thread safety: each call runs its own threads and returns when they are done.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "objstore/object_store.h"
#include "warmfs/result.h"

namespace warmfs::plan {

struct ProbeObject {
  std::string key;
  uint64_t size = 0;
};

struct BucketProbe {
  double first_byte_sec = 0;  // median of a few small GETs, one at a time
  double requests_per_sec = 0;
  double bytes_per_sec = 0;
  uint64_t requests = 0;  // of the burst
  uint64_t bytes = 0;
  double seconds = 0;
  uint32_t inflight = 0;
};

// GETs of the given objects (whole, or their first max_request_bytes), `inflight` at once,
// for about `seconds` (at least one request per thread; requests under way when the time is
// up finish). A failed GET fails the probe with its error.
Result<BucketProbe> probe_bucket(ObjectStore& store, const std::vector<ProbeObject>& objects,
                                 uint32_t inflight, double seconds,
                                 uint64_t max_request_bytes = 2ull << 20);

struct DiskProbe {
  double write_bytes_per_sec = 0;
  double read_bytes_per_sec = 0;
  uint64_t bytes = 0;
  uint64_t read_block_bytes = 0;
  bool direct = true;  // O_DIRECT was used (else through the page cache)
};

// Writes `bytes` sequentially in 1 MiB blocks to a temporary file in dir (created if
// missing), syncs, then reads `bytes` back in random blocks of read_block_bytes (a chunk
// record's size, rounded up to 4 KiB, 2 MiB at most) with 8 threads; removes the file.
Result<DiskProbe> probe_disk(const std::string& dir, uint64_t bytes, uint64_t read_block_bytes);

}  // namespace warmfs::plan
