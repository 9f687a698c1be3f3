// producers/hot_tls.hpp — how the hot path's thread_locals are declared.
//
// Initial-exec: one load from the thread pointer, also in libcuscope_inject.so, where the default
// (global-dynamic) model costs a __tls_get_addr call per access. A library loaded by dlopen gets
// initial-exec TLS from glibc's small static reserve (the whole library's TLS block, not only these
// variables), so every thread_local in cuscope is small and what a thread owns lives behind a
// pointer, on the heap.
#pragma once

#define CUSCOPE_HOT_TLS [[gnu::tls_model("initial-exec")]]
