// inject/static_program.hpp — whether libcuscope_inject.so was loaded into a statically linked
// program, where it must not run: NVTX's loader dlopens it there with a second C library that the
// process never initialized, and the session's first thread faults inside pthread_create (an
// unload, its destructors). The library then answers NVTX's and the driver's entry points with
// success and nothing more (NVTX makes every call a no-op and keeps the library loaded), says so in
// one line on stderr, and the program runs as if nothing were injected.
//
// Never: start a session, allocate, or call anything of that second C library but open, read,
// write and close.
#pragma once

#pragma GCC visibility push(hidden)
namespace cuscope::inline v0::detail::inject {

// True when this process's program (/proc/self/exe) is statically linked (gcc -static or
// -static-pie): no PT_INTERP, and no dynamic section or one without DT_SONAME (the dynamic loader
// run as a program, ld.so ./app, has one). The first call that finds it says so on stderr, once:
// "cuscope: PROGRAM is statically linked: ...".
bool declined_static_program() noexcept;

}  // namespace cuscope::inline v0::detail::inject
#pragma GCC visibility pop
