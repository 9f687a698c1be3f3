// A program that ends in the ways real programs do, for the at-exit tests (tests/CMakeLists.txt):
//   normal     returns from main
//   exit       calls std::exit from inside an open scope
//   thread     leaves a worker thread running in a scope when main returns
// The summary must print before CUDA's teardown, say what was left open, and never crash.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <cuscope/cuscope.hpp>
#include <thread>

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "normal";
  for (int i = 0; i < 4; ++i) {
    CUSCOPE_SCOPE("exit_step");
    { CUSCOPE_SCOPE("exit_work"); }
    cuscope::step();
  }
  if (std::strcmp(mode, "exit") == 0) {
    CUSCOPE_SCOPE("open_at_exit");
    std::exit(0);
  }
  if (std::strcmp(mode, "thread") == 0) {
    static std::atomic<bool> inside{false};  // main returns only once the worker's scope is open
    std::thread([] {
      CUSCOPE_SCOPE("detached_worker");
      inside.store(true);
      for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }).detach();
    while (!inside.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return 0;
}
