#include "server/http/fields_allocator.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory_resource>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "server/http/routes.h"
#include "tests/unit/http/http_fixture.h"

namespace ticketd::http {
namespace {

using beast::http::field;
using beast::http::status;
using beast::http::verb;

// A memory resource that counts what it hands out and gets back (over the heap).
class CountingResource : public std::pmr::memory_resource {
 public:
  std::size_t allocations = 0;
  std::size_t outstanding = 0;

 private:
  void* do_allocate(std::size_t bytes, std::size_t align) override {
    ++allocations;
    ++outstanding;
    return std::pmr::new_delete_resource()->allocate(bytes, align);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t align) override {
    --outstanding;
    std::pmr::new_delete_resource()->deallocate(p, bytes, align);
  }
  [[nodiscard]] bool do_is_equal(const memory_resource& other) const noexcept override {
    return this == &other;
  }
};

Request pooled_request(CountingResource& pool) {
  Request req{std::piecewise_construct, std::make_tuple(),
              std::make_tuple(FieldsAllocator<char>(&pool))};
  req.method(verb::post);
  req.target("/v1/sequences/Tickets64/next");
  req.set(field::host, "localhost");
  req.set(field::content_type, "application/json");
  return req;
}

TEST(FieldsAllocator, FieldsComeFromThePoolAndGoBackToIt) {
  CountingResource pool;
  {
    Request req = pooled_request(pool);
    EXPECT_GE(pool.allocations, 2U);
    EXPECT_EQ(req[field::host], "localhost");
  }
  EXPECT_EQ(pool.outstanding, 0U);
}

TEST(FieldsAllocator, AMoveKeepsThePoolACopyGoesToTheHeap) {
  CountingResource pool;
  {
    Request req = pooled_request(pool);
    const std::size_t before = pool.allocations;
    Request moved;  // as a parser's release() hands it on: default-constructed, then assigned
    moved = std::move(req);
    EXPECT_EQ(moved.get_allocator().pool(), &pool);
    EXPECT_EQ(pool.allocations, before);  // nothing copied
    EXPECT_EQ(moved[field::content_type], "application/json");

    const Request copy = moved;  // NOLINT(performance-unnecessary-copy-initialization)
    EXPECT_EQ(copy.get_allocator().pool(), nullptr);
    EXPECT_EQ(pool.allocations, before);
    EXPECT_EQ(copy[field::host], "localhost");
  }
  EXPECT_EQ(pool.outstanding, 0U);
}

TEST(FieldsAllocator, WithoutAPoolFieldsUseTheHeap) {
  Request req;
  req.set(field::host, "localhost");
  EXPECT_EQ(req.get_allocator().pool(), nullptr);
  EXPECT_EQ(req[field::host], "localhost");
}

// A request that outlives its session (kept by a handler a torn-down io_context destroys
// later) still frees into a live pool: the pool goes with its last block.
TEST(FieldsAllocator, APoolLivesUntilItsOwnerAndEveryBlockAreGone) {
  std::optional<Request> late;
  {
    const FieldsPool::Owner pool = FieldsPool::make_owned();
    Request req{std::piecewise_construct, std::make_tuple(),
                std::make_tuple(FieldsAllocator<char>(pool.get()))};
    req.set(field::host, "localhost");
    late.emplace(std::move(req));
  }
  EXPECT_EQ((*late)[field::host], "localhost");
  late->set(field::content_type, "application/json");  // the pool still serves
  late.reset();  // the last block back: the pool is deleted (ASan checks)
  { const FieldsPool::Owner unused = FieldsPool::make_owned(); }
}

// Once every block is back, the next request's fields start at the front of the arena again.
TEST(FieldsPool, RewindsOnlyWhenEveryBlockIsBack) {
  const FieldsPool::Owner owner = FieldsPool::make_owned();
  std::pmr::memory_resource& pool = *owner;
  void* a = pool.allocate(100, 8);
  void* b = pool.allocate(200, 8);
  EXPECT_NE(a, b);
  pool.deallocate(a, 100, 8);
  void* c = pool.allocate(100, 8);  // b is still out: no rewind, a fresh block
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  pool.deallocate(b, 200, 8);
  pool.deallocate(c, 100, 8);
  void* d = pool.allocate(100, 8);
  EXPECT_EQ(d, a);
  pool.deallocate(d, 100, 8);
}

// A header larger than the arena, or blocks past its end, come from the heap and go back
// there (ASan checks the frees), and the arena serves again afterwards.
TEST(FieldsPool, BlocksPastTheArenaComeFromTheHeap) {
  const FieldsPool::Owner owner = FieldsPool::make_owned();
  std::pmr::memory_resource& pool = *owner;
  void* first = pool.allocate(64, 8);
  std::vector<void*> blocks;
  for (int i = 0; i < 100; ++i) {
    void* p = pool.allocate(100, 8);
    std::memset(p, i, 100);
    blocks.push_back(p);
  }
  void* big = pool.allocate(FieldsPool::kArenaBytes + 1, 16);
  std::memset(big, 0xab, FieldsPool::kArenaBytes + 1);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big) % 16, 0U);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(static_cast<unsigned char*>(blocks[i])[99], i);  // no two blocks overlap
    pool.deallocate(blocks[i], 100, 8);
  }
  pool.deallocate(big, FieldsPool::kArenaBytes + 1, 16);
  pool.deallocate(first, 64, 8);
  void* again = pool.allocate(64, 8);
  EXPECT_EQ(again, first);
  pool.deallocate(again, 64, 8);
}

// A pooled request is answered, and every block it took is back once both are gone (the
// response's fields are its own text, not pool blocks).
TEST(FieldsAllocator, AnAnsweredRequestGivesEveryBlockBack) {
  CountingResource pool;
  {
    testing::HttpEngine e;
    Request req = pooled_request(pool);
    req.version(11);
    req.body() = "{}";
    req.prepare_payload();
    const Response res = e.call(std::move(req));
    EXPECT_EQ(res.result(), status::ok);
    EXPECT_EQ(res.body(), R"({"sequence":"Tickets64","ids":["1"]})");
  }
  EXPECT_GE(pool.allocations, 2U);
  EXPECT_EQ(pool.outstanding, 0U);
}

}  // namespace
}  // namespace ticketd::http
