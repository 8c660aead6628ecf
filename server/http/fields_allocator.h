// Where the header fields of HTTP requests get their memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <new>
#include <type_traits>

namespace ticketd::http {

/// The allocator of Request header fields. With a pool (a session's) every field of a request
/// comes from there and goes back there, so a kept-alive connection stops allocating for
/// headers after its first requests; without one (a request built by a test or outside a
/// session) it is plain operator new. Unlike
/// std::pmr::polymorphic_allocator it moves with its fields (a request moved into a
/// default-constructed one keeps the session's pool instead of copying every field to the
/// heap); a copy goes to the heap. The pool is not thread safe: a session uses it from its strand
/// only, and every message that holds memory from it ends before the session does.
template <class T>
class FieldsAllocator {
 public:
  using value_type = T;
  using propagate_on_container_copy_assignment = std::false_type;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using is_always_equal = std::false_type;

  FieldsAllocator() noexcept = default;
  explicit FieldsAllocator(std::pmr::memory_resource* pool) noexcept : pool_(pool) {}
  template <class U>
  FieldsAllocator(const FieldsAllocator<U>& other) noexcept  // NOLINT: rebinding is implicit
      : pool_(other.pool()) {}

  [[nodiscard]] T* allocate(std::size_t n) {
    if (pool_ == nullptr) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(pool_->allocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (pool_ == nullptr) return ::operator delete(p);
    pool_->deallocate(p, n * sizeof(T), alignof(T));
  }

  /// A copy of a message goes to the heap: only the session's own messages use its pool.
  [[nodiscard]] FieldsAllocator select_on_container_copy_construction() const noexcept {
    return FieldsAllocator{};
  }

  [[nodiscard]] std::pmr::memory_resource* pool() const noexcept { return pool_; }

  template <class U>
  friend bool operator==(const FieldsAllocator& a, const FieldsAllocator<U>& b) noexcept {
    return a.pool() == b.pool();
  }

 private:
  std::pmr::memory_resource* pool_ = nullptr;
};

/// A session's pool for FieldsAllocator: an arena that rewinds when every block it handed out
/// has come back. A request's fields are all freed once it is answered, so the next request
/// takes them from the same bytes: a bump of an offset, no search. Blocks past the arena (a
/// large header, or while an earlier request is still held) come from the heap. The arena is
/// made by the first allocation, so a connection that never sends a request has none. The pool
/// lives until its owner (the session) is gone and every block it handed out has come back: a
/// request kept by a queued handler that outlives the session (an io_context torn down
/// mid-request) still frees into a live pool. Created with make_owned(); not thread safe (one
/// session's strand).
class FieldsPool final : public std::pmr::memory_resource {
 public:
  /// The arena's size: a typical request's fields with room to spare.
  static constexpr std::size_t kArenaBytes = 2048;

  /// Ends the owner's share: the pool is deleted now or by the last block returned.
  struct Release {
    void operator()(FieldsPool* pool) const noexcept {
      pool->owned_ = false;
      if (pool->outstanding_ == 0) delete pool;
    }
  };
  using Owner = std::unique_ptr<FieldsPool, Release>;

  [[nodiscard]] static Owner make_owned() { return Owner(new FieldsPool); }

  FieldsPool(const FieldsPool&) = delete;
  FieldsPool& operator=(const FieldsPool&) = delete;

 private:
  FieldsPool() = default;
  ~FieldsPool() override = default;

  void* do_allocate(std::size_t bytes, std::size_t align) override {
    const std::size_t at = (used_ + align - 1) & ~(align - 1);
    void* p = nullptr;
    if (align <= alignof(std::max_align_t) && bytes <= kArenaBytes && at <= kArenaBytes - bytes) {
      if (!arena_) arena_ = std::make_unique_for_overwrite<Arena>();
      p = arena_->bytes + at;
      used_ = at + bytes;
    } else {
      p = ::operator new(bytes, std::align_val_t(align));
    }
    ++outstanding_;
    return p;
  }
  void do_deallocate(void* p, std::size_t /*bytes*/, std::size_t align) override {
    if (!in_arena(p)) ::operator delete(p, std::align_val_t(align));
    if (--outstanding_ == 0) {
      used_ = 0;  // everything is back: the next request starts at the front
      if (!owned_) delete this;
    }
  }
  [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }
  [[nodiscard]] bool in_arena(const void* p) const noexcept {
    if (!arena_) return false;
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    const auto front = reinterpret_cast<std::uintptr_t>(arena_->bytes);
    return at >= front && at < front + kArenaBytes;
  }

  struct Arena {
    alignas(std::max_align_t) std::byte bytes[kArenaBytes];
  };
  std::unique_ptr<Arena> arena_;
  std::size_t used_ = 0;
  std::size_t outstanding_ = 0;
  bool owned_ = true;
};

}  // namespace ticketd::http
