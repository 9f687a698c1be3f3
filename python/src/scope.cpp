// python/src/scope.cpp — cuscope.scope's methods, its streams and its per-name call sites.
// Every function here runs with the GIL held: it is what guards the site table and a scope's entries.
#include "scope.hpp"

#include <cstdint>
#include <cstring>
#include <string>

namespace nb = nanobind;

namespace cuscope::python {
namespace {

// As many distinct names as the library's name table holds; past it a scope looks its name up on
// each entry (and the library counts what does not fit).
constexpr Py_ssize_t kMaxSites = 131'072;
// The longest name given a site: the library keeps a name's first 200 bytes (model/names.hpp), so a
// longer one gains nothing by a site of its own, whose key and copy would each hold it whole.
constexpr std::size_t kLongestSiteName = 256;

// The calling thread's serial number, from 1: unlike a thread id, never that of an earlier thread.
std::uint64_t this_thread_serial() {
  static std::uint64_t next = 0;  // under the GIL
  thread_local std::uint64_t serial = 0;
  if (serial == 0) serial = ++next;
  return serial;
}

nb::dict& sites() {
  static nb::dict* table = new nb::dict();  // leaked: sites live as long as the process
  return *table;
}

nb::object& torch_stream_reader() {
  static nb::object* reader = new nb::object();
  return *reader;
}

nb::object& decorator() {
  static nb::object* decorate = new nb::object();
  return *decorate;
}

// The call site of `name`, made on the name's first scope: its text is copied once and kept. None
// (nullptr) when the site table is full, for a name with a NUL, which a site's C string would cut
// short, or for one past kLongestSiteName: such a scope looks its name up on each entry.
detail::Site* site_of(nb::str name) {
  nb::dict& table = sites();
  PyObject* found = PyDict_GetItemWithError(table.ptr(), name.ptr());
  if (found != nullptr) return static_cast<detail::Site*>(PyLong_AsVoidPtr(found));
  if (PyErr_Occurred()) throw nb::python_error();
  if (PyDict_Size(table.ptr()) >= kMaxSites) return nullptr;
  const std::string bytes = name_bytes(name);
  if (bytes.size() > kLongestSiteName || bytes.find('\0') != std::string::npos) return nullptr;
  char* text = new char[bytes.size() + 1];
  std::memcpy(text, bytes.c_str(), bytes.size() + 1);
  auto* site = new detail::Site(text, "<python>", 0);
  table[name] = nb::steal(PyLong_FromVoidPtr(site));
  return site;
}

cudaStream_t from_handle(nb::handle value) {
  if (!nb::isinstance<nb::int_>(value) || nb::isinstance<nb::bool_>(value))
    throw nb::type_error("a stream handle must be an int");
  std::uint64_t handle = 0;  // a pointer's bits: 0 to 2**64 - 1
  if (!nb::try_cast(value, handle)) {
    const bool negative = PyObject_RichCompareBool(value.ptr(), nb::int_(0).ptr(), Py_LT) == 1;
    throw nb::value_error(negative ? "a stream handle cannot be negative"
                                   : "a stream handle must fit in 64 bits");
  }
  return reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(handle));
}

}  // namespace

std::string name_bytes(nb::handle name) {
  Py_ssize_t size = 0;
  if (const char* utf8 = PyUnicode_AsUTF8AndSize(name.ptr(), &size))
    return {utf8, static_cast<std::size_t>(size)};
  PyErr_Clear();  // lone surrogates
  PyObject* bytes = PyUnicode_AsEncodedString(name.ptr(), "utf-8", "surrogateescape");
  if (bytes == nullptr) {
    PyErr_Clear();  // a surrogate that escapes no byte
    bytes = PyUnicode_AsEncodedString(name.ptr(), "utf-8", "surrogatepass");
  }
  if (bytes == nullptr) throw nb::python_error();
  const nb::bytes b = nb::steal<nb::bytes>(bytes);
  return {b.c_str(), b.size()};
}

cudaStream_t stream_from(nb::handle stream) {
  if (nb::isinstance<nb::int_>(stream) && !nb::isinstance<nb::bool_>(stream)) return from_handle(stream);
  if (nb::hasattr(stream, "__cuda_stream__")) {
    nb::object pair = stream.attr("__cuda_stream__")();
    if (!nb::isinstance<nb::tuple>(pair) || nb::len(pair) != 2)
      throw nb::type_error("__cuda_stream__() must return a (version, handle) tuple");
    return from_handle(pair[1]);
  }
  if (nb::hasattr(stream, "cuda_stream")) return from_handle(stream.attr("cuda_stream"));
  throw nb::type_error(
      "stream= takes an int handle, or an object with cuda_stream or __cuda_stream__ (torch.cuda.Stream)");
}

void set_python_helpers(nb::object torch_stream_reader_fn, nb::object decorate) {
  torch_stream_reader() = std::move(torch_stream_reader_fn);
  decorator() = std::move(decorate);
}

cudaStream_t torch_stream() {
  static PyObject* const kTorch = PyUnicode_InternFromString("torch");
  if (PyDict_GetItem(PyImport_GetModuleDict(), kTorch) == nullptr) return nullptr;
  nb::object& reader = torch_stream_reader();
  if (!reader.is_valid()) return nullptr;
  return from_handle(reader());
}

Scope::Scope(nb::str name, nb::handle stream) : name_(std::move(name)), site_(site_of(name_)) {
  if (site_ == nullptr) bytes_ = name_bytes(name_);
  if (stream.is_none()) return;
  stream_ = stream_from(stream);
  has_stream_ = true;
}

void Scope::enter() {
  const cudaStream_t s = stream();
  Entry e{nullptr, 0, this_thread_serial()};
  if (detail::g_state.load(std::memory_order_relaxed) != detail::kOff) {
    e.state = site_ != nullptr ? detail::enter(*site_, s, e.token) : detail::enter_named(bytes_, s, e.token);
  }
  if (!first_used_ && more_.empty()) {
    first_ = e;
    first_used_ = true;
  } else {
    more_.push_back(e);  // first_ stays the oldest entry, so the newest is always found first
  }
}

void Scope::exit() noexcept {
  const std::uint64_t me = this_thread_serial();
  Entry e{};
  bool found = false;
  for (auto it = more_.rbegin(); it != more_.rend() && !found; ++it) {
    if (it->thread != me) continue;
    e = *it;
    more_.erase(std::next(it).base());
    found = true;
  }
  if (!found && first_used_ && first_.thread == me) {
    e = first_;
    first_used_ = false;
    found = true;
  }
  // No entry of this thread: the newest entry of another thread ends here, as a C++ scope ended on
  // another thread does (counted, and closed on its own thread at that thread's next scope).
  if (!found && !more_.empty()) {
    e = more_.back();
    more_.pop_back();
    found = true;
  }
  if (!found && first_used_) {
    e = first_;
    first_used_ = false;
    found = true;
  }
  if (!found) {
    detail::unmatched_end();  // no entry on any thread: counted, as a pop() with no push() is
    return;
  }
  if (e.state == nullptr) return;
  // An entry of another thread: posted to its state, even where that thread exited and its state
  // passed to this one (a generator's scope finished on a new thread), never this thread's own end.
  if (e.thread != me) {
    detail::exit_elsewhere(e.state, e.token);
  } else {
    detail::exit(e.state, e.token);
  }
}

void bind_scope(nb::module_& m) {
  nb::class_<Scope>(m, "scope", R"doc(A named region: a range of the report, with host time and GPU time.
Every kernel, copy and set launched inside it is attributed to it; where CUPTI traces
(the default), its GPU time is the span of that work. Where it does not, the scope
records CUDA events on ``stream`` (or on torch's current stream when torch is imported
and no stream is given).

A context manager or a decorator; the name is interned once.

Example::

    with cuscope.scope("step"):
        with cuscope.scope("forward", stream=torch.cuda.current_stream()):
            y = model(x)

    @cuscope.scope("loss")
    def loss(y): ...

One object may be entered again while open, and from several threads: each thread's
exit closes that thread's latest entry (an exit on a thread with no entry ends another
thread's, counted as a scope ended on another thread); an exit with no entry on any
thread closes nothing and is counted as an unbalanced end. An exception inside the block
closes the scope and propagates.)doc")
      .def(nb::init<nb::str, nb::handle>(), nb::arg("name"), nb::arg("stream") = nb::none(),
           "Makes a scope named ``name`` (no ``/``), on ``stream`` (an int handle, or an object with "
           "``cuda_stream`` or ``__cuda_stream__``).")
      .def_prop_ro("name", &Scope::name, "The scope's name.")
      .def(
          "__enter__",
          [](nb::handle self) {
            if (!nb::inst_ready(self))  // a subclass whose __init__ did not call scope.__init__
              throw nb::type_error("cuscope.scope.__init__() was not called on this object");
            nb::inst_ptr<Scope>(self)->enter();
            return nb::borrow(self);
          },
          "Opens the scope; returns it.")
      .def(
          "__exit__",
          [](Scope& s, nb::handle, nb::handle, nb::handle) {
            s.exit();
            return false;
          },
          nb::arg("exc_type").none(), nb::arg("exc").none(), nb::arg("traceback").none(),
          "Closes the calling thread's latest entry; never swallows the exception.")
      .def(
          "__call__", [](nb::handle self, nb::handle func) { return decorator()(self, func); },
          nb::arg("func"),
          "Decorates ``func``: each call runs inside this scope (the name is interned once); of a "
          "generator function, sync or async, each resumption of its body, never its consumer's code.");
}

}  // namespace cuscope::python
