#include "common/buffer.h"

#include <sys/mman.h>

#include <deque>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace warmfs {
namespace {

// Size classes: 64 KiB steps below kHugePageBytes, 2 MiB steps from there.
size_t size_class(size_t n) {
  const size_t step = n < kHugePageBytes ? (64u << 10) : kHugePageBytes;
  return (n + step - 1) / step * step;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

// Faults the buffer's pages in with one call, before the bytes are copied in. On the
// paravirtualised guests measured (docs/benchmark-misses.md) this costs a third of taking
// the same faults one by one from the copy (0.5-0.8 against 1.8 s per GiB with huge pages).
// Advice only: an older kernel (EINVAL) or a short memory (ENOMEM) leaves the faults to the
// first touch, as before.
void populate(std::byte* p, size_t len) { ::madvise(p, len, MADV_POPULATE_WRITE); }

std::byte* map_buffer(size_t len) {
  if (len < kHugePageBytes) {
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    populate(static_cast<std::byte*>(p), len);
    return static_cast<std::byte*>(p);
  }
  // Map a huge page more than asked and keep the 2 MiB-aligned part, so every page of the
  // buffer can be a huge page.
  const size_t mapped = len + kHugePageBytes;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  auto* base = static_cast<std::byte*>(p);
  const size_t lead = (kHugePageBytes - reinterpret_cast<uintptr_t>(base) % kHugePageBytes) % kHugePageBytes;
  if (lead > 0) ::munmap(base, lead);
  ::munmap(base + lead + len, kHugePageBytes - lead);
  std::byte* data = base + lead;
  ::madvise(data, len, MADV_HUGEPAGE);  // advice only: without THP, plain pages
  populate(data, len);
  return data;
}

// Process-wide, like the heap it stands beside. When full, the buffers let go longest ago
// make room, so the pool follows the sizes in use now: a burst of 32 MiB read-ahead buffers
// must not leave it holding memory no 1 MiB cache read can take, or every such read maps
// fresh memory, whose first touch costs about 1 ms per MiB on the paravirtualised guests
// measured (docs/benchmark-misses.md).
class Pool {
 public:
  std::byte* take(size_t len) {
    std::byte* p = nullptr;
    {
      std::lock_guard lock(mu_);
      auto it = by_size_.find(len);
      if (it != by_size_.end() && !it->second.empty()) {
        auto entry = it->second.back();  // the newest of its size: the likeliest still warm
        it->second.pop_back();
        p = entry->data;
        lru_.erase(entry);
        pooled_ -= len;
        ++reused_;
      } else {
        ++mapped_;
      }
    }
    if (p == nullptr) return map_buffer(len);
    // Pages given back while it held several chunks (release_pages: a range GET's buffer,
    // 2 MiB and more) come back in one call. A smaller one is all resident; the call would
    // still cost 12 us per MiB walking its page table, per cache read.
    if (len >= kHugePageBytes) populate(p, len);
    return p;
  }

  void give(std::byte* p, size_t len) {
    std::vector<Entry> unmap;
    {
      std::lock_guard lock(mu_);
      if (len > kPoolMaxBytes) {
        unmap.push_back(Entry{p, len});
      } else {
        lru_.push_back(Entry{p, len});
        by_size_[len].push_back(std::prev(lru_.end()));
        pooled_ += len;
        while (pooled_ > kPoolMaxBytes) {
          // The oldest buffer is also the oldest of its size, the front of its list.
          const Entry old = lru_.front();
          auto& same = by_size_[old.len];
          same.pop_front();
          lru_.pop_front();
          pooled_ -= old.len;
          unmap.push_back(old);
        }
      }
    }
    for (const Entry& e : unmap) ::munmap(e.data, e.len);
  }

  BufferPoolStats stats() {
    std::lock_guard lock(mu_);
    return BufferPoolStats{pooled_, reused_, mapped_};
  }

 private:
  struct Entry {
    std::byte* data;
    size_t len;
  };
  std::mutex mu_;  // protects everything below
  std::list<Entry> lru_;  // every pooled buffer, oldest first
  std::map<size_t, std::deque<std::list<Entry>::iterator>> by_size_;  // oldest first, per class
  uint64_t pooled_ = 0, reused_ = 0, mapped_ = 0;
};

Pool& pool() {
  static Pool* p = new Pool();  // never destroyed: buffers may be let go during exit
  return *p;
}

}  // namespace

std::shared_ptr<std::byte[]> allocate_buffer(size_t n) {
  if (n < kPoolMinBytes) return std::shared_ptr<std::byte[]>(new std::byte[n]);
  const size_t len = size_class(n);
  std::byte* p = pool().take(len);
  return std::shared_ptr<std::byte[]>(p, [len](std::byte* q) { pool().give(q, len); });
}

BufferPoolStats buffer_pool_stats() { return pool().stats(); }

void release_pages(const std::byte* p, size_t n) {
  constexpr uintptr_t kPage = 4096;
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (begin + kPage - 1) & ~(kPage - 1);
  const uintptr_t last = (begin + n) & ~(kPage - 1);
  if (last <= first) return;
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace warmfs
