// producers/cupti/activity_kinds.cpp — see activity_kinds.hpp.
#include "producers/cupti/activity_kinds.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

#include "producers/cupti/errors.hpp"
#include "producers/cupti/subscriber.hpp"

namespace cuscope::inline v0::detail {
namespace {

constexpr std::array kKinds = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,  // not KERNEL, which serializes kernels
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2,  // peer-to-peer copies
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_MEMORY2,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_OVERHEAD,
    CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API,  // launches CUDA makes for the program (their API records)
};

const char* kind_name(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return "cuptiActivityEnable(CONCURRENT_KERNEL)";
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return "cuptiActivityEnable(MEMCPY)";
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return "cuptiActivityEnable(MEMSET)";
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return "cuptiActivityEnable(MEMORY2)";
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return "cuptiActivityEnable(SYNCHRONIZATION)";
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return "cuptiActivityEnable(EXTERNAL_CORRELATION)";
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return "cuptiActivityEnable(OVERHEAD)";
    default:
      return "cuptiActivityEnable";
  }
}

bool api_kind(CUpti_ActivityKind k) {
  return k == CUPTI_ACTIVITY_KIND_RUNTIME || k == CUPTI_ACTIVITY_KIND_DRIVER;
}

}  // namespace

std::vector<CUpti_ActivityKind> activity_kinds(RecordChoice want, bool launch_notes) {
  std::vector<CUpti_ActivityKind> kinds;
  for (CUpti_ActivityKind kind : kKinds) {
    // Launch notes stand for external correlations and the API records they ride on.
    if (launch_notes &&
        (kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION || kind == CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API))
      continue;
    if ((!want.syncs && kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) ||
        (!want.memory && kind == CUPTI_ACTIVITY_KIND_MEMORY2))
      continue;
    kinds.push_back(kind);
  }
  return kinds;
}

CUptiResult ActivityKinds::switch_kind(CUpti_ActivityKind kind, bool on) const {
  if (fake_ != nullptr) return fake_(kind, on);
  return on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
}

// Enables API records for the calls that launch work, and only those; returns the first refusal.
// The whole kind first, then every other call turned off: on an H100 (CUDA 13.0, driver 580),
// turning single calls on (cuptiActivityEnableRuntimeApi/DriverApi(cbid, 1)) without the kind gave
// no API records at all, nor external correlations, for a context made before CUPTI was first
// used (a program that called CUDA before its first scope): no kernel could be tied to a scope.
// The kind, then calls turned off, gave exactly the wanted records for both (docs/cupti.md).
CUptiResult ActivityKinds::trace_calls() {
  struct Domain {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId size;
    CUpti_ActivityKind kind;
  };
  const Domain domains[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, CUPTI_ACTIVITY_KIND_RUNTIME},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, CUPTI_ACTIVITY_KIND_DRIVER}};
  for (const Domain& d : domains) {
    CUptiResult r = switch_kind(d.kind, true);
    if (r != CUPTI_SUCCESS) return r;
    enabled_.push_back(d.kind);
    if (fake_ != nullptr) continue;  // tests: no calls to turn off
    for (CUpti_CallbackId cbid = 1; cbid < d.size; ++cbid) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(d.domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
      if (traced_call(name, d.domain == CUPTI_CB_DOMAIN_DRIVER_API, want_)) continue;
      r = d.domain == CUPTI_CB_DOMAIN_RUNTIME_API ? cuptiActivityEnableRuntimeApi(cbid, 0)
                                                  : cuptiActivityEnableDriverApi(cbid, 0);
      if (r != CUPTI_SUCCESS) return r;
    }
  }
  return CUPTI_SUCCESS;
}

std::string ActivityKinds::start(RecordChoice want, bool launch_notes) {
  want_ = want;
  launch_notes_ = launch_notes;
  paused_.clear();
  // The calls' records first and the GPU work's last, in resume()'s order: a launch that another
  // thread makes while they are switched on (an attach between step windows, on the stepper's or
  // the program's thread) has its API record and external correlation wherever it has a kernel
  // record, never a record that waits for a call that never comes (unresolved). enabled_ ends in
  // the same order as ever (the kernels first, the API kinds last), which pause() follows.
  if (!launch_notes) {
    if (CUptiResult r = trace_calls(); r != CUPTI_SUCCESS)
      return cupti_refusal("cuptiActivityEnable(RUNTIME/DRIVER)", r);
  }
  const std::vector<CUpti_ActivityKind> kinds = activity_kinds(want, launch_notes);
  for (auto kind = kinds.rbegin(); kind != kinds.rend(); ++kind) {
    if (CUptiResult r = switch_kind(*kind, true); r != CUPTI_SUCCESS)
      return cupti_refusal(kind_name(*kind), r);
    enabled_.insert(enabled_.begin(), *kind);
  }
  // Queries of events and streams whose work has not finished yet say nothing about waiting;
  // without this every poll of a running event would be a record.
  cuptiActivityEnableAllSyncRecords(0);
  return {};
}

CUptiResult ActivityKinds::enable_event_records() {
  const CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
  if (r == CUPTI_SUCCESS) enabled_.push_back(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
  return r;
}

// Disabling a kind ends its calls' records too; the calls turned off stay off until the kind is
// enabled again, which turns every call back on (CUPTI: the kind overrides per-call settings made
// before it).
void ActivityKinds::off() {
  for (CUpti_ActivityKind kind : enabled_) switch_kind(kind, false);
  enabled_.clear();
  paused_.clear();  // off already
  fake_ = nullptr;  // the next session's kinds are CUPTI's
}

std::string ActivityKinds::pause() {
  std::vector<CUpti_ActivityKind> kept;  // still on: CUDA_EVENT, and from a refusal on, the rest
  for (std::size_t i = 0; i < enabled_.size(); ++i) {
    const CUpti_ActivityKind kind = enabled_[i];
    if (kind == CUPTI_ACTIVITY_KIND_CUDA_EVENT) {
      kept.push_back(kind);
    } else if (CUptiResult r = switch_kind(kind, false); r != CUPTI_SUCCESS) {
      kept.insert(kept.end(), enabled_.begin() + static_cast<std::ptrdiff_t>(i), enabled_.end());
      enabled_ = std::move(kept);
      return cupti_refusal("cuptiActivityDisable", r);
    } else {
      paused_.push_back(kind);
    }
  }
  enabled_ = std::move(kept);
  return launch_notes_ ? pause_launch_callbacks(true) : std::string{};
}

std::string ActivityKinds::resume() {
  if (launch_notes_) {
    if (std::string why = pause_launch_callbacks(false); !why.empty()) return why;
  }
  const bool api = std::any_of(paused_.begin(), paused_.end(), api_kind);
  std::erase_if(paused_, api_kind);
  if (api) {
    // The kind turns every call's records back on: trace_calls() turns the others off again.
    if (CUptiResult r = trace_calls(); r != CUPTI_SUCCESS)
      return cupti_refusal("cuptiActivityEnable(RUNTIME/DRIVER)", r);
  }
  while (!paused_.empty()) {
    const CUpti_ActivityKind kind = paused_.back();
    if (CUptiResult r = switch_kind(kind, true); r != CUPTI_SUCCESS) return cupti_refusal(kind_name(kind), r);
    // Back in the order they were on (the API kinds after them, as at the start): the next pause
    // turns them off in the same order, the kernels first.
    enabled_.insert(enabled_.begin(), kind);
    paused_.pop_back();
  }
  cuptiActivityEnableAllSyncRecords(0);  // as start() left it
  return {};
}

void ActivityKinds::fake_for_testing(const std::vector<CUpti_ActivityKind>& kinds,
                                     CUptiResult (*fake)(CUpti_ActivityKind kind, bool on)) {
  fake_ = fake;
  enabled_ = kinds;
  paused_.clear();
  launch_notes_ = false;
}

}  // namespace cuscope::inline v0::detail
