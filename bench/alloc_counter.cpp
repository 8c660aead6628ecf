// A heap-allocation counter for benchmarks, preloaded into a Release ticketd:
//   LD_PRELOAD=build/bench/liballoc_counter.so ALLOC_COUNTER_FILE=/tmp/x ticketd ...
// It counts every malloc, calloc, realloc and aligned allocation (operator new ends in malloc)
// of the process. On SIGUSR2 it writes "<allocations>\n" to ALLOC_COUNTER_FILE, so a driver can
// read the count before and after N requests and divide. Not linked into ticketd itself.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
}

namespace {

std::atomic<std::uint64_t> g_allocations{0};
const char* g_path = nullptr;

void count() { g_allocations.fetch_add(1, std::memory_order_relaxed); }

// Async-signal-safe: open, write and close only, digits formatted by hand.
void dump(int) {
  if (g_path == nullptr) return;
  char text[24];
  std::uint64_t v = g_allocations.load(std::memory_order_relaxed);
  int i = sizeof(text);
  text[--i] = '\n';
  do {
    text[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  const int fd = ::open(g_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  const ssize_t n = ::write(fd, text + i, sizeof(text) - static_cast<std::size_t>(i));
  (void)n;
  ::close(fd);
}

__attribute__((constructor)) void install() {
  g_path = std::getenv("ALLOC_COUNTER_FILE");
  struct sigaction sa {};
  sa.sa_handler = dump;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, nullptr);
}

}  // namespace

extern "C" {

void* malloc(std::size_t n) {
  count();
  return __libc_malloc(n);
}

void* calloc(std::size_t a, std::size_t b) {
  count();
  return __libc_calloc(a, b);
}

void* realloc(void* p, std::size_t n) {
  count();
  return __libc_realloc(p, n);
}

void* memalign(std::size_t align, std::size_t n) {
  count();
  return __libc_memalign(align, n);
}

void* aligned_alloc(std::size_t align, std::size_t n) {
  count();
  return __libc_memalign(align, n);
}

int posix_memalign(void** out, std::size_t align, std::size_t n) {
  count();
  void* p = __libc_memalign(align, n);
  if (p == nullptr) return 12;  // ENOMEM
  *out = p;
  return 0;
}

}  // extern "C"
