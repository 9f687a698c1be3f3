// producers/hot_tls.hpp — how the hot path's thread_locals are declared.
//
// Initial-exec: one load from the thread pointer, also in libcuscope_inject.so, where the default
// (global-dynamic) model costs a __tls_get_addr call per access. A library loaded by dlopen gets
// initial-exec TLS from glibc's small static reserve (the whole library's TLS block, not only these
// variables), so every thread_local in cuscope is small and what a thread owns lives behind a
// pointer, on the heap.
#pragma once

#include <new>

#define CUSCOPE_HOT_TLS [[gnu::tls_model("initial-exec")]]

namespace cuscope::inline v0::detail {

/// Makes the calling thread's object behind its thread_local pointer `slot` (on its first use)
/// and frees it when the thread exits. nullptr when memory runs out.
template <class T>
[[gnu::noinline]] T* make_thread_owned(T*& slot) noexcept {
  struct FreeAtExit {
    T** slot;
    ~FreeAtExit() {
      delete *slot;
      *slot = nullptr;
    }
  };
  static thread_local FreeAtExit free_at_exit{&slot};  // constructed here, destroyed at thread exit
  static_cast<void>(&free_at_exit);
  slot = new (std::nothrow) T;
  return slot;
}

}  // namespace cuscope::inline v0::detail
