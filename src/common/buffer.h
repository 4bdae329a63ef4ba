// Large I/O buffers: the memory a range GET or a cache read lands in.
//
// A cold read moves every byte through a buffer, and on a virtual machine the first touch of
// a page the process did not have is a page fault that costs more than copying the page (the
// host backs it only then). So buffers of kPoolMinBytes and more are mapped on their own,
// those of kHugePageBytes and more 2 MiB-aligned and advised to use transparent huge pages
// (one fault per 2 MiB instead of 512), their pages are faulted in with one
// madvise(MADV_POPULATE_WRITE) before the copy (one call costs less than taking the faults
// one by one from the copy), and a buffer let go is kept in a small pool for the next one of
// its size class instead of going back to the system: a stream that evicts as much as it
// fetches reuses memory it already has. Smaller buffers come from the heap.
//
// A buffer that a download fills (allocate_fill_buffer) lives instead in one shared file in
// memory (a memfd, mapped once), and its bytes go in with fill_buffer(), a pwrite into that
// file: the kernel takes new pages for a file without zeroing them or mapping them into the
// process, which costs a fraction of populating anonymous memory and copying into it (the
// probe's figures are in docs/benchmark-misses.md). A pass that only needs a copy (the CRC,
// the SSD tier's write) takes it with copy_from_buffer(), a pread, and leaves the pages
// unmapped; the first read through the pointer maps them (a read fault per 16 pages).
// Anything may still write through the pointer; only the cost differs.
//
// The pool holds at most kPoolMaxBytes; beyond that, the buffers let go longest ago are
// unmapped (or their pages punched out of the file), so it keeps the sizes in use now.
// Thread safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace warmfs {

inline constexpr size_t kHugePageBytes = 2u << 20;
// Smaller buffers (a small object's chunk, a listing) come from the heap.
inline constexpr size_t kPoolMinBytes = 256u << 10;
// Fill buffers this small come from the heap: for them the file's bookkeeping costs more than
// the page faults it saves. Above it, a small object's chunk also lands in the memory file.
inline constexpr size_t kFillMinBytes = 16u << 10;
// What the pool keeps at most: enough to hand memory from evicted chunks to new fetches.
inline constexpr size_t kPoolMaxBytes = 32u << 20;

// An uninitialised buffer of at least n bytes (n > 0). Throws std::bad_alloc like new[].
std::shared_ptr<std::byte[]> allocate_buffer(size_t n);

// The same, for a buffer that fill_buffer() fills. Falls back to allocate_buffer where the
// system has no memfd, or once the file's reserved address space (64 GiB) is in use.
std::shared_ptr<std::byte[]> allocate_fill_buffer(size_t n);

// Copies n bytes from src to dst: by pwrite when [dst, dst + n) lies in a buffer from
// allocate_fill_buffer, by memcpy otherwise.
void fill_buffer(std::byte* dst, const std::byte* src, size_t n);

// Copies n bytes from src to out: by pread when [src, src + n) lies in a buffer from
// allocate_fill_buffer (so the process does not map its pages), by memcpy otherwise.
void copy_from_buffer(std::byte* out, const std::byte* src, size_t n);

// Where a byte of a fill buffer lives in its memory file: a descriptor to pread or splice
// from (owned by the buffer module, open for the life of the process) and the offset of p.
struct BufferFile {
  int fd = -1;
  uint64_t offset = 0;
};
// nullopt when p is not in a buffer from allocate_fill_buffer.
std::optional<BufferFile> buffer_file(const std::byte* p);

// Gives the pages wholly inside [p, p + n) back to the system (MADV_DONTNEED), leaving the
// mapping: the next touch of them faults in zeros. For a part of a buffer from
// allocate_buffer that nothing will read again while the rest of the buffer lives on.
void release_pages(const std::byte* p, size_t n);

struct BufferPoolStats {
  uint64_t pooled_bytes = 0;  // kept for reuse right now
  uint64_t reused = 0;        // buffers handed out from the pool
  uint64_t mapped = 0;        // buffers mapped afresh
  uint64_t file_bytes = 0;    // of the memory file: ranges handed out or pooled right now
};
BufferPoolStats buffer_pool_stats();

// Bytes of memory the memory file of fill buffers holds now (its pages, mapped or not): they
// are the process's memory like its resident set, which counts only the ones it has mapped.
uint64_t buffer_file_resident_bytes();

}  // namespace warmfs
