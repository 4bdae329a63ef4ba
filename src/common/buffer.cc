#include "common/buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace warmfs {

std::shared_ptr<std::byte[]> allocate_buffer(size_t n) {
  if (n < kHugePageBytes) return std::shared_ptr<std::byte[]>(new std::byte[n]);
  // Map a huge page more than asked, and use the 2 MiB-aligned part, so every page of the
  // buffer can be a huge page.
  const size_t len = (n + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const size_t mapped = len + kHugePageBytes;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  auto* base = static_cast<std::byte*>(p);
  const auto addr = reinterpret_cast<uintptr_t>(base);
  const size_t lead = (kHugePageBytes - addr % kHugePageBytes) % kHugePageBytes;
  if (lead > 0) ::munmap(base, lead);
  if (kHugePageBytes - lead > 0) ::munmap(base + lead + len, kHugePageBytes - lead);
  std::byte* data = base + lead;
  ::madvise(data, len, MADV_HUGEPAGE);  // advice only: without THP, plain pages
  return std::shared_ptr<std::byte[]>(data, [len](std::byte* q) { ::munmap(q, len); });
}

}  // namespace warmfs
