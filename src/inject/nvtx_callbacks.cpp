// inject/nvtx_callbacks.cpp — what libcuscope_inject.so gives NVTX: the callbacks that NVTX's
// InitializeInjectionNvtx2 writes into a module's function tables (NVTX_INJECTION64_PATH).
//
// Push/pop ranges, in every domain, become cuscope ranges: the same tree, attribution and report as
// a Scope. A range in a named domain sits under a range named after the domain, opened by the
// thread's first open range of that domain. Start/end ranges (which may end on another thread and
// need not nest) go to the span table. The "cuscope" domain is left out: those are cuscope's own
// scopes, already counted.
//
// Hot path (a push/pop in the default or a named domain): the message's pointer into the thread's
// cache of names, its text checked there (registered strings carry their id in the handle), the
// thread's stack, and the range tree's common entry and exit, as a scope's. Straight code that
// tail-calls the general code when any of it declines; it must never lock, allocate or save a
// register it could avoid. What it inlines lives in the headers beside this file, so that
// [[gnu::flatten]] reaches it.
#include <nvtx3/nvToolsExt.h>

#include <cstddef>
#include <cstdint>

#include "inject/domains.hpp"
#include "inject/message_cache.hpp"
#include "inject/open_ranges.hpp"
#include "inject/static_program.hpp"
#include "model/range_tree.hpp"
#include "producers/clock.hpp"
#include "session/session.hpp"

namespace cuscope::inline v0::detail::inject {
namespace {

// Push and pop: the common case is straight code that either does it all or changes nothing and
// tail-calls the general code (as scope.cpp's common path does), so that it saves no register.

// Opens `name_id` in `domain` (whose frame, if it has one, is open) by the common entry.
[[gnu::always_inline]] inline bool push_common(OpenRanges& o, std::uint32_t name_id, std::uint16_t domain,
                                               int* level) {
  if (o.depth == OpenRanges::kMax) return false;
  OpenRanges::Entry& e = o.entries[o.depth];
  e.kind = domain | OpenRanges::kCommon;  // unused unless entered
  if (!enter_common(name_id, e)) return false;
  const std::uint32_t depth = o.depth;
  o.depth = depth + 1;
  if (domain != 0) ++o.open_in[domain];
  *level = static_cast<int>(depth);
  return true;
}

// Closes the innermost range when it is `domain`'s own, opened by the common entry on this thread,
// not the last range above its domain's frame, and closes by the common exit.
[[gnu::always_inline]] inline bool pop_common(OpenRanges& o, std::uint16_t domain, ThreadState** closed_on,
                                              int* level) {
  const std::uint32_t depth = o.depth;
  if (depth - 1 >= OpenRanges::kMax - 1) return false;  // none open, or full (pushes may be skipped)
  const OpenRanges::Entry& top = o.entries[depth - 1];
  ThreadState* ts = top.ts;
  if (top.kind != (domain | OpenRanges::kCommon) || ts != t_state) return false;
  if (domain != 0 && o.open_in[domain] == 2) return false;  // its frame is left: pop_range() closes both
  model::ThreadTree& tree = *ts->tree;
  const ClockSegment* clock = g_clock_segment.load(std::memory_order_acquire);
  if (clock == nullptr || tree.exits_decline() ||
      (g_flags.load(std::memory_order_relaxed) & kCounters) != 0 ||
      !tree.end_common(top.token, clock->to_ns(cycle_counter())))
    return false;
  o.depth = depth - 1;
  if (domain != 0) --o.open_in[domain];
  *closed_on = ts;
  *level = static_cast<int>(depth - 1);
  return true;
}

// After a common pop that found an end posted from another thread: an entry below is innermost now.
[[gnu::noinline]] int settled(ThreadState* ts, int level) {
  settle_remote_ends(ts);
  return level;
}

[[gnu::always_inline]] inline int popped(ThreadState* ts, int level) {
  return ts->tree->remote_posted() ? settled(ts, level) : level;
}

[[gnu::noinline]] int push_a_general(const char* message) {
  OpenRanges* o = open_ranges();
  return o != nullptr ? push_range(*o, nullptr, o->names.id(message)) : 0;
}
[[gnu::noinline]] int pop_general(const Domain* d) {
  OpenRanges* o = open_ranges();
  return o != nullptr ? pop_range(*o, d) : -1;
}
[[gnu::noinline]] int domain_push_general(const Domain* d, const nvtxEventAttributes_t* a) {
  OpenRanges* o = open_ranges();
  return o != nullptr ? push_range(*o, d, name_of(o->names, a)) : 0;
}

// The default domain's calls are handed to NVTX only when that domain counts (fill_tables()):
// left out, they stay NVTX's no-ops.
[[gnu::flatten]] int NVTX_API push_a(const char* message) {
  OpenRanges* o = t_open;
  std::uint32_t id = 0;
  int level = 0;
  if (o != nullptr && o->names.find(message, &id) && push_common(*o, id, 0, &level)) return level;
  return push_a_general(message);
}
int NVTX_API push_w(const wchar_t* message) {
  OpenRanges* o = open_ranges();
  return o != nullptr ? push_range(*o, nullptr, intern_message(utf8_of(message))) : 0;
}
int NVTX_API push_ex(const nvtxEventAttributes_t* a) { return domain_push_general(nullptr, a); }
[[gnu::flatten]] int NVTX_API pop_default() {
  OpenRanges* o = t_open;
  ThreadState* ts = nullptr;
  int level = 0;
  if (o != nullptr && pop_common(*o, 0, &ts, &level)) return popped(ts, level);
  return pop_general(nullptr);
}
// A domain's calls: a left-out domain costs one test of its handle.
[[gnu::flatten]] int NVTX_API domain_push_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) {
  if (left_out(h)) return 0;
  const Domain* d = reinterpret_cast<const Domain*>(h);
  if (d == nullptr) return default_counted() ? domain_push_general(nullptr, a) : 0;
  OpenRanges* o = t_open;
  std::uint32_t id = 0;
  int level = 0;
  // The domain's frame open (or none for it: a shared index), as when its ranges nest.
  if (o != nullptr && (d->index == kSharedDomain || o->open_in[d->index] != 0) &&
      name_common(o->names, a, &id) && push_common(*o, id, d->index, &level))
    return level;
  return domain_push_general(d, a);
}
[[gnu::flatten]] int NVTX_API domain_pop(nvtxDomainHandle_t h) {
  if (left_out(h)) return 0;
  const Domain* d = reinterpret_cast<const Domain*>(h);
  if (d == nullptr) return default_counted() ? pop_general(nullptr) : 0;
  OpenRanges* o = t_open;
  ThreadState* ts = nullptr;
  int level = 0;
  if (o != nullptr && pop_common(*o, d->index, &ts, &level)) return popped(ts, level);
  return pop_general(d);
}

nvtxRangeId_t NVTX_API start_a(const char* message) {
  OpenRanges* o = open_ranges();
  return o != nullptr ? start_span(nullptr, o->names.id(message)) : 0;
}
nvtxRangeId_t NVTX_API start_w(const wchar_t* message) {
  return start_span(nullptr, intern_message(utf8_of(message)));
}
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) {
  OpenRanges* o = open_ranges();
  return o != nullptr ? start_span(nullptr, name_of(o->names, a)) : 0;
}
void NVTX_API end_any(nvtxRangeId_t id) { end_span(id); }
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) {
  if (left_out(h)) return 0;
  const Domain* d = reinterpret_cast<const Domain*>(h);
  if (d == nullptr && !default_counted()) return 0;
  OpenRanges* o = open_ranges();
  return o != nullptr ? start_span(d, name_of(o->names, a)) : 0;
}
void NVTX_API domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) { end_span(id); }

nvtxStringHandle_t NVTX_API register_a(nvtxDomainHandle_t, const char* s) {
  return registered_handle(intern_message(s ? s : ""));
}
nvtxStringHandle_t NVTX_API register_w(nvtxDomainHandle_t, const wchar_t* s) {
  return registered_handle(intern_message(utf8_of(s)));
}
nvtxDomainHandle_t NVTX_API create_a(const char* name) {
  try {
    return handle_of(domain_named(name != nullptr ? name : ""));
  } catch (...) {
    return nullptr;  // out of memory: its ranges count in the default domain
  }
}
nvtxDomainHandle_t NVTX_API create_w(const wchar_t* name) {
  try {
    return handle_of(domain_named(utf8_of(name)));
  } catch (...) {
    return nullptr;
  }
}
void NVTX_API destroy_domain(nvtxDomainHandle_t) {}  // handles stay valid: a late pop still finds its domain

// ---- the tables ----------------------------------------------------------------------------

struct Callback {
  unsigned id;
  NvtxFunctionPointer fn;
};
template <class Fn>
NvtxFunctionPointer fn(Fn f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}
// Fills the slots the module's table has (an older NVTX has fewer).
template <std::size_t N>
void set(NvtxFunctionTable table, unsigned size, const Callback (&callbacks)[N]) {
  for (const Callback& c : callbacks) {
    if (c.id < size && table[c.id] != nullptr) *table[c.id] = c.fn;
  }
}

int fill_tables(NvtxGetExportTableFunc_t get) {
  read_domain_filter();
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  NvtxFunctionTable core = nullptr;
  unsigned core_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0 || core == nullptr)
    return 0;
  const Callback core_callbacks[] = {
      {NVTX_CBID_CORE_RangePushA, fn(&push_a)},     {NVTX_CBID_CORE_RangePushW, fn(&push_w)},
      {NVTX_CBID_CORE_RangePushEx, fn(&push_ex)},   {NVTX_CBID_CORE_RangePop, fn(&pop_default)},
      {NVTX_CBID_CORE_RangeStartA, fn(&start_a)},   {NVTX_CBID_CORE_RangeStartW, fn(&start_w)},
      {NVTX_CBID_CORE_RangeStartEx, fn(&start_ex)}, {NVTX_CBID_CORE_RangeEnd, fn(&end_any)}};
  if (default_counted()) set(core, core_size, core_callbacks);  // left out: NVTX's no-ops, no call
  NvtxFunctionTable core2 = nullptr;
  unsigned core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) != 0 && core2 != nullptr) {
    const Callback core2_callbacks[] = {{NVTX_CBID_CORE2_DomainRangePushEx, fn(&domain_push_ex)},
                                        {NVTX_CBID_CORE2_DomainRangePop, fn(&domain_pop)},
                                        {NVTX_CBID_CORE2_DomainRangeStartEx, fn(&domain_start_ex)},
                                        {NVTX_CBID_CORE2_DomainRangeEnd, fn(&domain_end)},
                                        {NVTX_CBID_CORE2_DomainRegisterStringA, fn(&register_a)},
                                        {NVTX_CBID_CORE2_DomainRegisterStringW, fn(&register_w)},
                                        {NVTX_CBID_CORE2_DomainCreateA, fn(&create_a)},
                                        {NVTX_CBID_CORE2_DomainCreateW, fn(&create_w)},
                                        {NVTX_CBID_CORE2_DomainDestroy, fn(&destroy_domain)}};
    set(core2, core2_size, core2_callbacks);
  }
  return 1;
}

}  // namespace
}  // namespace cuscope::inline v0::detail::inject

extern "C" {

/// NVTX's entry point: called once per module that uses NVTX, with that module's tables.
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  // Success with no table filled: NVTX makes every call a no-op and keeps the library loaded (an
  // unload would run its destructors against that second C library, which faults as well).
  if (cuscope::detail::inject::declined_static_program()) return 1;
  try {
    return cuscope::detail::inject::fill_tables(get);
  } catch (...) {
    return 0;  // NVTX then leaves the module's calls as no-ops
  }
}

}  // extern "C"
