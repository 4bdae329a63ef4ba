// Large I/O buffers: the memory a range GET or a cache read lands in.
//
// A cold read moves every byte through a freshly allocated buffer, and on a virtual machine
// the first touch of each 4 KiB page of it is a page fault that costs more than copying the
// page. Buffers of at least kHugePageBytes are therefore mapped on their own and advised to
// use transparent huge pages (one fault per 2 MiB instead of 512); smaller ones come from the
// heap. Either way the memory goes back to the system when the last owner lets go, so the
// resident set follows what the caches hold.
#pragma once

#include <cstddef>
#include <memory>

namespace warmfs {

inline constexpr size_t kHugePageBytes = 2u << 20;

// An uninitialised buffer of n bytes (n > 0). Never fails: throws std::bad_alloc like new[].
std::shared_ptr<std::byte[]> allocate_buffer(size_t n);

}  // namespace warmfs
