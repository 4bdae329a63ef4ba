// Name: one path component (a file's or directory's name), in 16 bytes.
//
// The namespace keeps a name per entry in its listings and per node the kernel holds, a
// million of each for a million-file tree, so a name costs 16 bytes and not std::string's 32:
// up to 15 bytes are held in place, a longer name in a heap copy of exactly its bytes. Object
// names in datasets are mostly short ("000123.jpg", "shard-00042.tar"), so most take no heap.
// A Name reads as a std::string_view; it is a value type like std::string, and const use from
// many threads is fine.
#pragma once

#include <compare>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace warmfs {

class Name {
 public:
  Name() = default;
  // Implicit: a Name stands where a std::string did (DirEntry{"a"}, e.name = key.substr(..)).
  Name(std::string_view s);                                  // NOLINT(google-explicit-constructor)
  Name(const std::string& s) : Name(std::string_view(s)) {}  // NOLINT
  Name(const char* s) : Name(std::string_view(s)) {}         // NOLINT

  Name(const Name& other) : Name(other.view()) {}
  Name(Name&& other) noexcept {
    std::memcpy(bytes_, other.bytes_, sizeof bytes_);
    other.bytes_[kTag] = 0;  // the heap copy, if any, is ours now
  }
  Name& operator=(const Name& other) {
    if (this != &other) *this = Name(other);
    return *this;
  }
  Name& operator=(Name&& other) noexcept;
  ~Name() { release(); }

  std::string_view view() const {
    if (on_heap()) return std::string_view(heap(), heap_size());
    return std::string_view(reinterpret_cast<const char*>(bytes_), bytes_[kTag]);
  }
  operator std::string_view() const { return view(); }  // NOLINT(google-explicit-constructor)
  std::string str() const { return std::string(view()); }
  size_t size() const { return on_heap() ? heap_size() : bytes_[kTag]; }
  bool empty() const { return size() == 0; }

  friend bool operator==(const Name& a, const Name& b) { return a.view() == b.view(); }
  friend bool operator==(const Name& a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const Name& a, const std::string& b) { return a.view() == b; }
  friend bool operator==(const Name& a, const char* b) { return a.view() == b; }
  friend std::strong_ordering operator<=>(const Name& a, const Name& b) {
    return a.view() <=> b.view();
  }
  friend std::strong_ordering operator<=>(const Name& a, std::string_view b) {
    return a.view() <=> b;
  }
  friend std::strong_ordering operator<=>(const Name& a, const std::string& b) {
    return a.view() <=> std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const Name& a, const char* b) {
    return a.view() <=> std::string_view(b);
  }

 private:
  // bytes_[kTag]: the length of a name held in place (0..kInline), or kHeapTag. On the heap,
  // bytes_ starts with the copy's address and then its uint32_t length.
  static constexpr size_t kTag = 15;
  static constexpr size_t kInline = 15;
  static constexpr unsigned char kHeapTag = 0xff;

  bool on_heap() const { return bytes_[kTag] == kHeapTag; }
  const char* heap() const {
    const char* p;
    std::memcpy(&p, bytes_, sizeof p);
    return p;
  }
  uint32_t heap_size() const {
    uint32_t n;
    std::memcpy(&n, bytes_ + sizeof(char*), sizeof n);
    return n;
  }
  void release() {
    if (on_heap()) delete[] heap();
    bytes_[kTag] = 0;
  }

  unsigned char bytes_[16] = {};
};

static_assert(sizeof(Name) == 16 && alignof(Name) == 1);

}  // namespace warmfs
