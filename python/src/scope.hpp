// python/src/scope.hpp — cuscope.scope: a C++ scope as a Python context manager and decorator.
//
// One object may be entered many times: nested (`with s: with s:`), from several threads, or as a
// decorator's scope on every call. Each entry keeps its own token, tagged with its thread (a serial
// number no later thread takes, where a thread id may be reused), and an exit closes the calling
// thread's latest entry. The name is interned once per distinct name (a
// call site of its own, as CUSCOPE_SCOPE makes one), so the steady state hashes nothing in C++.
// Hot path (__enter__/__exit__): no Python allocation; never here: locks, device synchronization.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <cuscope/scope.hpp>
#include <string>
#include <vector>

namespace cuscope::python {

/// The bytes of a name (a str): its UTF-8, with lone surrogates as the bytes they escape (os.fsdecode
/// and sys.argv make them from bytes that are not UTF-8), or, where one escapes none, each as its own
/// three bytes. Either way not UTF-8: the library writes such bytes as '?' and counts the name as
/// adjusted, as it does for a C++ name.
std::string name_bytes(nanobind::handle name);

/// The CUDA stream a `stream=` argument names: an int handle, or an object with `cuda_stream` (an
/// int, as torch.cuda.Stream has) or `__cuda_stream__()` (returning (version, handle)). Raises
/// TypeError for anything else, ValueError for a handle below 0 or past 64 bits.
cudaStream_t stream_from(nanobind::handle stream);

/// The current torch stream when torch is imported and has initialized CUDA, else the default
/// stream. Never imports torch, never initializes CUDA.
cudaStream_t torch_stream();

/// Installs the Python halves: the function that reads torch's current stream
/// (cuscope._torch_stream) and the one that wraps a function in a scope (cuscope._decorate).
void set_python_helpers(nanobind::object torch_stream_reader, nanobind::object decorate);

class Scope {
 public:
  Scope(nanobind::str name, nanobind::handle stream);
  void enter();
  void exit() noexcept;
  [[nodiscard]] nanobind::str name() const { return name_; }

 private:
  struct Entry {
    detail::ThreadState* state;
    std::uint32_t token;
    std::uint64_t thread;  ///< this_thread_serial() of the entering thread
  };
  cudaStream_t stream() const { return has_stream_ ? stream_ : torch_stream(); }

  nanobind::str name_;
  detail::Site*
      site_;           ///< nullptr when the site table is full or the name has a NUL: looked up on each entry
  std::string bytes_;  ///< the name's bytes, for a scope without a site
  cudaStream_t stream_ = nullptr;
  bool has_stream_ = false;
  bool first_used_ = false;
  Entry first_{};
  std::vector<Entry> more_;  ///< entries while `first_` is taken (nesting, other threads)
};

void bind_scope(nanobind::module_& m);

}  // namespace cuscope::python
