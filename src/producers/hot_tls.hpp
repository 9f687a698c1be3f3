// producers/hot_tls.hpp — how the hot path's thread_locals are declared.
//
// Initial-exec: one load from the thread pointer, also in libcuscope_inject.so, where the default
// (global-dynamic) model costs a __tls_get_addr call per access. A library loaded by dlopen gets
// initial-exec TLS from glibc's small static reserve (the whole library's TLS block, not only these
// variables), so every thread_local in cuscope is small and what a thread owns lives behind a
// pointer, on the heap.
#pragma once

#include <pthread.h>

#include <new>

#if defined(__CUDACC__)
// nvcc's front end does not take a TLS model on a declaration; .cu files only declare these (and
// do not use them on a hot path), and a model differing between declarations is the linker's to settle.
#define CUSCOPE_HOT_TLS
#else
#define CUSCOPE_HOT_TLS [[gnu::tls_model("initial-exec")]]
#endif

namespace cuscope::inline v0::detail {

/// Makes the calling thread's object behind its thread_local pointer `slot` (on its first use)
/// and frees it when the thread exits. nullptr when memory runs out.
///
/// Freed by a pthread key's destructor, which glibc runs after every thread_local destructor of
/// the thread: a program's thread_local whose destructor pushes or pops a range (constructed
/// before the thread's first range, so destroyed after anything constructed then) still finds the
/// thread's object. One made again by a later key destructor is set on the key again, so glibc
/// frees it in its next round.
template <class T>
[[gnu::noinline]] T* make_thread_owned(T*& slot) noexcept {
  struct Free {
    static void at_exit(void* slot_address) {
      T** s = static_cast<T**>(slot_address);
      delete *s;
      *s = nullptr;
    }
  };
  static pthread_key_t key;
  static const bool keyed = pthread_key_create(&key, &Free::at_exit) == 0;
  slot = new (std::nothrow) T;
  if (slot == nullptr) return nullptr;
  if (keyed && pthread_setspecific(key, &slot) == 0) return slot;
  // No key (the process has used up its keys): freed by a thread_local's destructor instead, in
  // C++'s order, so a later thread_local destructor's range may make the object again (and leak it).
  struct FreeAtExit {
    T** slot;
    ~FreeAtExit() { Free::at_exit(slot); }
  };
  static thread_local FreeAtExit free_at_exit{&slot};  // constructed here, destroyed at thread exit
  static_cast<void>(&free_at_exit);
  return slot;
}

}  // namespace cuscope::inline v0::detail
