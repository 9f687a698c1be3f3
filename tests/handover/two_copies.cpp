// tests/handover/two_copies.cpp — a program that links no cuscope and loads two libraries that
// each hold a copy (copy_lib.cpp) with RTLD_LOCAL, as Python loads extensions:
//
//   two_copies LIB_A LIB_B first-a | first-b | race
//
// first-a: copy a starts the session, then b's scopes run inside a's; first-b: the other way
// round; race: two threads start it through a and through b at once, then each runs its scopes.
// Prints which start() started the session and what each copy's snapshot() sees;
// check_two_copies.py compares that, the exit report and the one table, exactly. Never links
// cuscope itself: the copies in the libraries are the only ones.
#include <dlfcn.h>

#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>

namespace {

struct Copy {
  bool (*start)() = nullptr;
  void (*scopes)(int, void (*)()) = nullptr;
  std::uint64_t (*calls)(const char*) = nullptr;
};

Copy g_a, g_b;

bool load(const char* path, Copy& c) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "two_copies: %s\n", dlerror());
    return false;
  }
  c.start = reinterpret_cast<bool (*)()>(dlsym(lib, "copy_start"));
  c.scopes = reinterpret_cast<void (*)(int, void (*)())>(dlsym(lib, "copy_scopes"));
  c.calls = reinterpret_cast<std::uint64_t (*)(const char*)>(dlsym(lib, "copy_calls"));
  return c.start != nullptr && c.scopes != nullptr && c.calls != nullptr;
}

void three_b() { g_b.scopes(3, nullptr); }
void three_a() { g_a.scopes(3, nullptr); }

// Both threads start at once (as near as a spin on a flag gets them).
void race(bool& a_started, bool& b_started) {
  std::atomic<bool> go{false};
  std::thread ta([&] {
    while (!go.load()) {
    }
    a_started = g_a.start();
    g_a.scopes(4, nullptr);
  });
  std::thread tb([&] {
    while (!go.load()) {
    }
    b_started = g_b.start();
    g_b.scopes(5, nullptr);
  });
  go.store(true);
  ta.join();
  tb.join();
}

void print_seen(const char* copy, const Copy& c) {
  std::printf("%s sees:", copy);
  for (const char* path : {"copy_a", "copy_a/copy_b", "copy_b", "copy_b/copy_a"})
    std::printf(" %s=%" PRIu64, path, c.calls(path));
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || !load(argv[1], g_a) || !load(argv[2], g_b)) return 2;
  bool a_started = false, b_started = false;
  if (std::strcmp(argv[3], "first-a") == 0) {
    a_started = g_a.start();
    b_started = g_b.start();
    g_a.scopes(2, &three_b);
  } else if (std::strcmp(argv[3], "first-b") == 0) {
    b_started = g_b.start();
    a_started = g_a.start();
    g_b.scopes(2, &three_a);
  } else if (std::strcmp(argv[3], "race") == 0) {
    race(a_started, b_started);
  } else {
    return 2;
  }
  std::printf("started: a=%d b=%d\n", a_started ? 1 : 0, b_started ? 1 : 0);
  print_seen("a", g_a);
  print_seen("b", g_b);
  return 0;
}
