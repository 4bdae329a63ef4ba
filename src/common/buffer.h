// Large I/O buffers: the memory a range GET or a cache read lands in.
//
// A cold read moves every byte through a buffer, and on a virtual machine the first touch of
// a page the process did not have is a page fault that costs more than copying the page (the
// host backs it only then). So buffers of kPoolMinBytes and more are mapped on their own,
// those of kHugePageBytes and more 2 MiB-aligned and advised to use transparent huge pages
// (one fault per 2 MiB instead of 512), their pages are faulted in with one
// madvise(MADV_POPULATE_WRITE) before the copy (a third of the cost of taking the faults
// from the copy on the guest measured), and a buffer let go is kept in a small pool for the
// next one of its size class instead of going back to the system: a stream that evicts as
// much as it fetches reuses memory it already has. Smaller buffers come from the heap.
//
// The pool holds at most kPoolMaxBytes; beyond that, the buffers let go longest ago are
// unmapped, so it keeps the sizes in use now. Thread safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace warmfs {

inline constexpr size_t kHugePageBytes = 2u << 20;
// Smaller buffers (a small object's chunk, a listing) come from the heap.
inline constexpr size_t kPoolMinBytes = 256u << 10;
// What the pool keeps at most: enough to hand memory from evicted chunks to new fetches.
inline constexpr size_t kPoolMaxBytes = 32u << 20;

// An uninitialised buffer of at least n bytes (n > 0). Throws std::bad_alloc like new[].
std::shared_ptr<std::byte[]> allocate_buffer(size_t n);

// Gives the pages wholly inside [p, p + n) back to the system (MADV_DONTNEED), leaving the
// mapping: the next touch of them faults in zeros. For a part of a buffer from
// allocate_buffer that nothing will read again while the rest of the buffer lives on.
void release_pages(const std::byte* p, size_t n);

struct BufferPoolStats {
  uint64_t pooled_bytes = 0;  // kept for reuse right now
  uint64_t reused = 0;        // buffers handed out from the pool
  uint64_t mapped = 0;        // buffers mapped afresh
};
BufferPoolStats buffer_pool_stats();

}  // namespace warmfs
