#include "common/buffer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <utility>
#include <vector>

namespace warmfs {
namespace {

// Size classes: pages below kPoolMinBytes (only fill buffers are that small: a small object's
// chunk), 64 KiB steps below kHugePageBytes, 2 MiB steps from there.
size_t size_class(size_t n) {
  const size_t step = n < kPoolMinBytes ? 4096 : n < kHugePageBytes ? (64u << 10) : kHugePageBytes;
  return (n + step - 1) / step * step;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

// Faults the buffer's pages in with one call, before the bytes are copied in: on
// paravirtualised guests this costs far less than taking the same faults one by one from the
// copy (docs/benchmark-misses.md).
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
  const size_t lead =
      (kHugePageBytes - reinterpret_cast<uintptr_t>(base) % kHugePageBytes) % kHugePageBytes;
  if (lead > 0) ::munmap(base, lead);
  ::munmap(base + lead + len, kHugePageBytes - lead);
  std::byte* data = base + lead;
  ::madvise(data, len, MADV_HUGEPAGE);  // advice only: without THP, plain pages
  populate(data, len);
  return data;
}

// The memory file behind fill buffers: one memfd, its first kArenaBytes mapped shared once,
// carved into ranges. A range let go has its pages punched out of the file and its addresses
// kept for the next range that fits (best fit, neighbours merged), so the address space in
// use follows the bytes in use. Not inherited across fork (MADV_DONTFORK): a child makes its
// own on first use.
constexpr size_t kArenaBytes = 64ull << 30;
constexpr size_t kPage = 4096;

class Arena {
 public:
  // nullptr when the system has no memfd or will not map it.
  static Arena* create() {
    const int fd = ::memfd_create("warmfs-buffers", MFD_CLOEXEC);
    if (fd < 0) return nullptr;
    if (::ftruncate(fd, static_cast<off_t>(kArenaBytes)) != 0) {
      ::close(fd);
      return nullptr;
    }
    void* p =
        ::mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      return nullptr;
    }
    ::madvise(p, kArenaBytes, MADV_DONTFORK);
    return new Arena(fd, static_cast<std::byte*>(p));
  }

  bool contains(const std::byte* p) const { return p >= base_ && p < base_ + kArenaBytes; }

  // A range of len bytes (a multiple of kPage), or nullptr when none is left.
  std::byte* take(size_t len) {
    std::lock_guard lock(mu_);
    auto it = by_len_.lower_bound({len, 0});
    size_t at;
    if (it != by_len_.end()) {
      const auto [free_len, free_at] = *it;
      by_len_.erase(it);
      by_at_.erase(free_at);
      at = free_at;
      if (free_len > len) add_free(at + len, free_len - len);
    } else if (bump_ + len <= kArenaBytes) {
      at = bump_;
      bump_ += len;
    } else {
      return nullptr;
    }
    in_use_ += len;
    return base_ + at;
  }

  // Frees a range from take(): its pages leave the file, its addresses are kept for reuse.
  void give(std::byte* p, size_t len) {
    punch(p, len);
    std::lock_guard lock(mu_);
    in_use_ -= len;
    size_t at = static_cast<size_t>(p - base_);
    // Merge with the free neighbours on either side.
    auto next = by_at_.lower_bound(at);
    if (next != by_at_.end() && next->first == at + len) {
      len += next->second;
      by_len_.erase({next->second, next->first});
      next = by_at_.erase(next);
    }
    if (next != by_at_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == at) {
        at = prev->first;
        len += prev->second;
        by_len_.erase({prev->second, prev->first});
        by_at_.erase(prev);
      }
    }
    if (at + len == bump_) {
      bump_ = at;  // the top of what was handed out: give the addresses back to the bump
    } else {
      add_free(at, len);
    }
  }

  // The pages wholly inside [p, p + n) leave the file; the addresses stay valid (zeros).
  void punch(const std::byte* p, size_t n) {
    const auto begin = static_cast<size_t>(p - base_);
    const size_t first = (begin + kPage - 1) & ~(kPage - 1);
    const size_t last = (begin + n) & ~(kPage - 1);
    if (last <= first) return;
    ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(first),
                static_cast<off_t>(last - first));
  }

  // Copies into the file at dst's place; memcpy (which faults pages in) if pwrite fails.
  void fill(std::byte* dst, const std::byte* src, size_t n) {
    size_t done = 0;
    while (done < n) {
      const ssize_t w = ::pwrite(fd_, src + done, n - done, static_cast<off_t>(dst - base_ + done));
      if (w > 0) {
        done += static_cast<size_t>(w);
      } else if (w < 0 && errno == EINTR) {
        continue;
      } else {
        std::memcpy(dst + done, src + done, n - done);
        return;
      }
    }
  }

  // Copies out of the file; memcpy through the mapping if pread fails.
  void copy_out(std::byte* out, const std::byte* src, size_t n) {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd_, out + done, n - done, static_cast<off_t>(src - base_ + done));
      if (r > 0) {
        done += static_cast<size_t>(r);
      } else if (r < 0 && errno == EINTR) {
        continue;
      } else {
        std::memcpy(out + done, src + done, n - done);
        return;
      }
    }
  }

  BufferFile file_of(const std::byte* p) const {
    return BufferFile{fd_, static_cast<uint64_t>(p - base_)};
  }

  uint64_t resident() const {
    struct stat st {};
    return ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
  }

  uint64_t in_use() {
    std::lock_guard lock(mu_);
    return in_use_;
  }

  // In a forked child: the mapping was not inherited; only the descriptor is let go.
  void abandon() { ::close(fd_); }

 private:
  Arena(int fd, std::byte* base) : fd_(fd), base_(base) {}
  void add_free(size_t at, size_t len) {
    by_at_.emplace(at, len);
    by_len_.emplace(len, at);
  }

  const int fd_;
  std::byte* const base_;
  std::mutex mu_;                               // protects everything below
  size_t bump_ = 0;                             // addresses from here on were never handed out
  std::map<size_t, size_t> by_at_;              // free ranges below bump_: offset -> length
  std::set<std::pair<size_t, size_t>> by_len_;  // the same, as (length, offset)
  uint64_t in_use_ = 0;
};

// The current arena: made on first use, dropped in a forked child (which has no mapping of
// it), nullptr for good when the system cannot make one.
std::atomic<Arena*> g_arena{nullptr};
std::atomic<bool> g_arena_failed{false};
std::atomic<uint64_t> g_arena_generation{1};  // bumped when a child drops the parent's
std::mutex g_arena_mu;                        // serialises making one

void forget_arena_in_child() {
  // Only the forking thread runs here; the parent's arena is not mapped in this process.
  if (Arena* a = g_arena.exchange(nullptr)) a->abandon();  // the object itself is leaked
  g_arena_generation.fetch_add(1);
}

Arena* arena() {
  Arena* a = g_arena.load(std::memory_order_acquire);
  if (a != nullptr || g_arena_failed.load(std::memory_order_relaxed)) return a;
  std::lock_guard lock(g_arena_mu);
  a = g_arena.load(std::memory_order_acquire);
  if (a != nullptr) return a;
  static const bool registered = (::pthread_atfork(nullptr, nullptr, forget_arena_in_child), true);
  (void)registered;
  a = Arena::create();
  if (a == nullptr) {
    g_arena_failed.store(true);
  } else {
    g_arena.store(a, std::memory_order_release);
  }
  return a;
}

// Process-wide, like the heap it stands beside. When full, the buffers let go longest ago
// make room, so the pool follows the sizes in use now: a burst of 32 MiB read-ahead buffers
// must not leave it holding memory no 1 MiB cache read can take, or every such read maps
// fresh memory, whose first touch costs far more than a copy on paravirtualised guests
// (docs/benchmark-misses.md).
class Pool {
 public:
  // A pooled buffer of len bytes: anonymous (gen 0) or a range of the arena of generation
  // gen; nullptr when there is none.
  std::byte* take(size_t len, uint64_t gen) {
    std::byte* p = nullptr;
    {
      std::lock_guard lock(mu_);
      auto it = by_size_.find(Key{len, gen != 0});
      while (p == nullptr && it != by_size_.end() && !it->second.empty()) {
        auto entry = it->second.back();  // the newest of its size: the likeliest still warm
        it->second.pop_back();
        const Entry e = *entry;
        lru_.erase(entry);
        pooled_ -= len;
        // A range of an arena this process no longer maps (a forked child) is forgotten.
        if (e.gen == gen) p = e.data;
      }
      ++(p != nullptr ? reused_ : mapped_);
    }
    // Pages given back while it held several chunks (release_pages: a range GET's buffer,
    // 2 MiB and more) come back in one call. A smaller one is all resident; the call would
    // still walk its page table on every cache read, for nothing. Arena ranges are
    // filled by pwrite, which needs no pages mapped first.
    if (p != nullptr && gen == 0 && len >= kHugePageBytes) populate(p, len);
    return p;
  }

  void give(std::byte* p, size_t len, uint64_t gen) {
    std::vector<Entry> unpool;
    {
      std::lock_guard lock(mu_);
      if (len > kPoolMaxBytes) {
        unpool.push_back(Entry{p, len, gen});
      } else {
        lru_.push_back(Entry{p, len, gen});
        by_size_[Key{len, gen != 0}].push_back(std::prev(lru_.end()));
        pooled_ += len;
        while (pooled_ > kPoolMaxBytes) {
          // The oldest buffer is also the oldest of its size, the front of its list.
          const Entry old = lru_.front();
          by_size_[Key{old.len, old.gen != 0}].pop_front();
          lru_.pop_front();
          pooled_ -= old.len;
          unpool.push_back(old);
        }
      }
    }
    for (const Entry& e : unpool) free(e);
  }

  BufferPoolStats stats() {
    BufferPoolStats s;
    {
      std::lock_guard lock(mu_);
      s = BufferPoolStats{pooled_, reused_, mapped_, 0};
    }
    if (Arena* a = g_arena.load(std::memory_order_acquire)) s.file_bytes = a->in_use();
    return s;
  }

 private:
  struct Entry {
    std::byte* data;
    size_t len;
    uint64_t gen;  // 0: anonymous memory; else the arena generation it came from
  };
  struct Key {
    size_t len;
    bool file;
    auto operator<=>(const Key&) const = default;
  };
  static void free(const Entry& e) {
    if (e.gen == 0) {
      ::munmap(e.data, e.len);
    } else if (e.gen == g_arena_generation.load()) {
      if (Arena* a = g_arena.load(std::memory_order_acquire)) a->give(e.data, e.len);
    }
  }

  std::mutex mu_;         // protects everything below
  std::list<Entry> lru_;  // every pooled buffer, oldest first
  std::map<Key, std::deque<std::list<Entry>::iterator>> by_size_;  // oldest first, per class
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
  std::byte* p = pool().take(len, 0);
  if (p == nullptr) p = map_buffer(len);
  return std::shared_ptr<std::byte[]>(p, [len](std::byte* q) { pool().give(q, len, 0); });
}

std::shared_ptr<std::byte[]> allocate_fill_buffer(size_t n) {
  if (n < kFillMinBytes) return std::shared_ptr<std::byte[]>(new std::byte[n]);
  Arena* a = arena();
  if (a == nullptr) return allocate_buffer(n);
  const uint64_t gen = g_arena_generation.load();
  const size_t len = size_class(n);
  std::byte* p = pool().take(len, gen);
  if (p == nullptr) p = a->take(len);
  if (p == nullptr) return allocate_buffer(n);  // the reserved addresses are all in use
  return std::shared_ptr<std::byte[]>(p, [len, gen](std::byte* q) { pool().give(q, len, gen); });
}

void fill_buffer(std::byte* dst, const std::byte* src, size_t n) {
  Arena* a = g_arena.load(std::memory_order_acquire);
  if (a != nullptr && a->contains(dst)) {
    a->fill(dst, src, n);
  } else {
    std::memcpy(dst, src, n);
  }
}

void copy_from_buffer(std::byte* out, const std::byte* src, size_t n) {
  Arena* a = g_arena.load(std::memory_order_acquire);
  if (a != nullptr && a->contains(src)) {
    a->copy_out(out, src, n);
  } else {
    std::memcpy(out, src, n);
  }
}

std::optional<BufferFile> buffer_file(const std::byte* p) {
  Arena* a = g_arena.load(std::memory_order_acquire);
  if (a == nullptr || !a->contains(p)) return std::nullopt;
  return a->file_of(p);
}

BufferPoolStats buffer_pool_stats() { return pool().stats(); }

uint64_t buffer_file_resident_bytes() {
  Arena* a = g_arena.load(std::memory_order_acquire);
  return a != nullptr ? a->resident() : 0;
}

void release_pages(const std::byte* p, size_t n) {
  if (Arena* a = g_arena.load(std::memory_order_acquire); a != nullptr && a->contains(p)) {
    a->punch(p, n);  // MADV_DONTNEED would only unmap a shared file's pages, not free them
    return;
  }
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (begin + kPage - 1) & ~(kPage - 1);
  const uintptr_t last = (begin + n) & ~(kPage - 1);
  if (last <= first) return;
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace warmfs
