// tests/fake_cuda.hpp — a CUDA runtime with no GPU behind it, for the CUDA-event timer: the calls of
// producers/cuda_calls.hpp backed by fake devices, a fake device clock that the test advances,
// events that complete when recorded or only when the test says, and a count of every call.
// While a FakeCuda lives, cuscope's event calls go to it and a session that starts finds its
// devices (so scopes on its streams record events: set Options::activities = false, CUPTI is real).
// CPU tests use it, and bench/cpu_bench.cpp to measure a stream scope's host cost without a GPU.
// With cupti_event_records(true) it also plays CUPTI's part in CUSCOPE_EVENT_TIMESTAMPS=cupti: the
// callbacks at each record call's entry, and CUDA_EVENT records handed over at each delivery.
//
// Never: call the CUDA runtime, lock, or allocate after construction; live beside another FakeCuda,
// or be made or destroyed while a session runs.
//
//   cuscope_test::FakeCuda cuda;                       // 2 devices, events complete when recorded
//   cuscope::start(options_with_activities_off);
//   { CUSCOPE_SCOPE("step", cuscope_test::FakeCuda::stream(1)); cuda.advance_ns(500'000); }
//   cuscope::flush();                                   // "step": gpu.total_ns == 500'000
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include "producers/cuda_calls.hpp"
#include "producers/cuda_probe.hpp"
#include "producers/event_timestamps.hpp"

namespace cuscope_test {

class FakeCuda {
 public:
  static constexpr std::size_t kMaxEvents = std::size_t{1} << 14;  // created over a FakeCuda's life

  /// Plain copies of the call counters (calls()).
  struct Counts {
    std::uint64_t create = 0, record = 0, query = 0, elapsed = 0, destroy = 0, get_device = 0, set_device = 0,
                  stream_get_device = 0, stream_is_capturing = 0, exchange_capture_mode = 0,
                  get_last_error = 0, create_without_timing = 0;
  };

  /// As CUPTI with CUDA_EVENT records and device timestamps (CUSCOPE_EVENT_TIMESTAMPS=cupti):
  /// each record call's entry noted by the runtime callback (and the driver's), its record kept
  /// until deliver_cupti_records() hands it to cuscope's table. `by_driver`: the record carries the
  /// driver call's correlation id instead of the runtime call's.
  void cupti_event_records(bool on, bool by_driver = false) {
    cupti_.store(on, std::memory_order_relaxed);
    cupti_by_driver_.store(by_driver, std::memory_order_relaxed);
  }
  /// As CUPTI's normal flush (flag 0), which hands over only buffers whose every record is
  /// complete: while any CUDA_EVENT record undelivered has an event that has not happened on the
  /// device (complete_on_record(false), until complete_all()), no record is delivered, those of
  /// finished events before and after it included (one buffer). Off (the default): each record
  /// comes at the first delivery after its call, whether its event has happened or not. (An event
  /// recorded again holds its earlier records back too: record each once before complete_all().)
  void cupti_holds_unfinished(bool on) { cupti_holds_.store(on, std::memory_order_relaxed); }
  /// What a delivery of CUPTI's buffers does (adapter.cpp's deliver(0)): count it, then put
  /// every CUDA_EVENT record made since the last delivery. `lose`: the records never come. A record
  /// still being written (its thread between taking a slot and filling it) comes at a later
  /// delivery and holds back no other thread's: CUPTI keeps a buffer per thread.
  void deliver_cupti_records(bool lose = false) {
    cuscope::detail::event_timestamps().count_delivery();
    const std::size_t n = std::min(cupti_made_.load(std::memory_order_relaxed), kMaxEvents);
    if (cupti_holds_.load(std::memory_order_relaxed)) {
      for (std::size_t i = cupti_delivered_; i < n; ++i) {
        const CuptiRecord& r = cupti_records_[i];
        if (!r.delivered && (!r.ready.load(std::memory_order_acquire) ||
                             !r.event->complete.load(std::memory_order_acquire)))
          return;  // the buffer holds an incomplete record: none of it comes
      }
    }
    bool all_before = true;  // every record before i delivered: the low-water mark moves on
    for (std::size_t i = cupti_delivered_; i < n; ++i) {
      CuptiRecord& r = cupti_records_[i];
      if (!r.delivered && r.ready.load(std::memory_order_acquire)) {
        if (!lose) cuscope::detail::event_timestamps().put(r.correlation, r.device_ns);
        r.delivered = true;
      }
      if (all_before && r.delivered) {
        cupti_delivered_ = i + 1;  // one thread delivers (as CUPTI's flush does)
      } else {
        all_before = false;
      }
    }
  }

  explicit FakeCuda(int devices = 2) : devices_(devices), events_(new Event[kMaxEvents]) {
    active() = this;
    cuscope::detail::set_cuda_calls_for_testing(&kCalls);
    probe_.available = true;
    probe_.device_count = devices;
    probe_.device = "fake CUDA device (tests/fake_cuda.hpp)";
    cuscope::detail::set_gpu_probe_for_testing(&probe_);
  }
  ~FakeCuda() {
    cuscope::detail::set_gpu_probe_for_testing(nullptr);
    cuscope::detail::set_cuda_calls_for_testing(nullptr);
    active() = nullptr;
  }
  FakeCuda(const FakeCuda&) = delete;
  FakeCuda& operator=(const FakeCuda&) = delete;

  /// A stream of `device` (a handle never dereferenced; `index` tells a device's streams apart).
  static cudaStream_t stream(int device, int index = 0) {
    return reinterpret_cast<cudaStream_t>(kStreamBase + (static_cast<std::uintptr_t>(device) << 8) +
                                          static_cast<std::uintptr_t>(index));
  }

  /// The fake device clock, which stamps every event recorded.
  void advance_ns(std::uint64_t ns) { clock_ns_.fetch_add(ns, std::memory_order_relaxed); }
  /// true (the default): an event completes when it is recorded; false: only at complete_all().
  void complete_on_record(bool on) { complete_on_record_.store(on, std::memory_order_relaxed); }
  /// Every cudaEventRecord keeps the calling thread this long (a real one takes about 1.7 µs with
  /// timing on an H100): for what a scope's host time must leave out.
  void record_takes(std::chrono::nanoseconds d) { record_busy_ns_.store(d.count(), std::memory_order_relaxed); }
  /// Completes every event recorded so far.
  void complete_all() {
    const std::size_t n = std::min(created_.load(std::memory_order_relaxed), kMaxEvents);
    for (std::size_t i = 0; i < n; ++i) events_[i].complete.store(true, std::memory_order_release);
  }
  /// The stream being captured into a graph (nullptr: none).
  void capture(cudaStream_t stream) { capturing_.store(stream, std::memory_order_relaxed); }
  Counts calls() const {
    Counts c;
    c.create = n_.create.load(std::memory_order_relaxed);
    c.record = n_.record.load(std::memory_order_relaxed);
    c.query = n_.query.load(std::memory_order_relaxed);
    c.elapsed = n_.elapsed.load(std::memory_order_relaxed);
    c.destroy = n_.destroy.load(std::memory_order_relaxed);
    c.get_device = n_.get_device.load(std::memory_order_relaxed);
    c.set_device = n_.set_device.load(std::memory_order_relaxed);
    c.stream_get_device = n_.stream_get_device.load(std::memory_order_relaxed);
    c.stream_is_capturing = n_.stream_is_capturing.load(std::memory_order_relaxed);
    c.exchange_capture_mode = n_.exchange_capture_mode.load(std::memory_order_relaxed);
    c.get_last_error = n_.get_last_error.load(std::memory_order_relaxed);
    c.create_without_timing = n_.create_without_timing.load(std::memory_order_relaxed);
    return c;
  }

 private:
  static constexpr std::uintptr_t kStreamBase = 0x5000'0000;

  struct Event {
    std::atomic<int> device{-1};
    std::atomic<bool> alive{false};
    std::atomic<bool> recorded{false};
    std::atomic<bool> complete{false};
    std::atomic<bool> timing{true};
    std::atomic<std::uint64_t> at_ns{0};
  };
  struct CuptiRecord {  // a CUDA_EVENT record: the record call's correlation id, the device's time
    std::uint32_t correlation = 0;
    std::uint64_t device_ns = 0;
    Event* event = nullptr;          // the event recorded: its record is complete once it has happened
    std::atomic<bool> ready{false};  // written: a delivery on another thread may hand it over
    bool delivered = false;          // the delivering thread's own
  };
  struct Counters {
    std::atomic<std::uint64_t> create{0}, record{0}, query{0}, elapsed{0}, destroy{0}, get_device{0},
        set_device{0}, stream_get_device{0}, stream_is_capturing{0}, exchange_capture_mode{0},
        get_last_error{0}, create_without_timing{0};
  };

  static FakeCuda*& active() {
    static FakeCuda* fake = nullptr;
    return fake;
  }
  static FakeCuda& self() { return *active(); }
  static void count(std::atomic<std::uint64_t>& n) { n.fetch_add(1, std::memory_order_relaxed); }
  static int& current_device() {
    thread_local int device = 0;
    return device;
  }
  static int device_of(cudaStream_t s) {
    return static_cast<int>((reinterpret_cast<std::uintptr_t>(s) - kStreamBase) >> 8);
  }
  bool is_stream(cudaStream_t s) const {
    const auto v = reinterpret_cast<std::uintptr_t>(s);
    return v >= kStreamBase && device_of(s) < devices_;
  }
  Event* event(cudaEvent_t e) {
    const auto i = reinterpret_cast<std::uintptr_t>(e);
    if (i == 0 || i > kMaxEvents) return nullptr;
    Event* ev = &events_[i - 1];
    return ev->alive.load(std::memory_order_acquire) ? ev : nullptr;
  }

  static cudaError_t create(cudaEvent_t* out, unsigned int flags) {
    FakeCuda& f = self();
    count(f.n_.create);
    if ((flags & cudaEventDisableTiming) != 0) count(f.n_.create_without_timing);
    const std::size_t i = f.created_.fetch_add(1, std::memory_order_relaxed);
    if (i >= kMaxEvents) return cudaErrorMemoryAllocation;
    f.events_[i].timing.store((flags & cudaEventDisableTiming) == 0, std::memory_order_relaxed);
    f.events_[i].device.store(current_device(), std::memory_order_relaxed);
    f.events_[i].alive.store(true, std::memory_order_release);
    *out = reinterpret_cast<cudaEvent_t>(i + 1);
    return cudaSuccess;
  }
  static cudaError_t record(cudaEvent_t e, cudaStream_t s) {
    FakeCuda& f = self();
    count(f.n_.record);
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::nanoseconds(f.record_busy_ns_.load(std::memory_order_relaxed));
    while (std::chrono::steady_clock::now() < until) {
    }
    Event* ev = f.event(e);
    if (ev == nullptr || !f.is_stream(s) || ev->device.load(std::memory_order_relaxed) != device_of(s))
      return cudaErrorInvalidResourceHandle;  // as CUDA: an event records on its own device's streams
    ev->at_ns.store(f.clock_ns_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    ev->recorded.store(true, std::memory_order_relaxed);
    if (f.cupti_.load(std::memory_order_relaxed)) f.cupti_record(ev, ev->at_ns.load(std::memory_order_relaxed));
    ev->complete.store(f.complete_on_record_.load(std::memory_order_relaxed), std::memory_order_release);
    return cudaSuccess;
  }
  static cudaError_t query(cudaEvent_t e) {
    FakeCuda& f = self();
    count(f.n_.query);
    Event* ev = f.event(e);
    if (ev == nullptr) return cudaErrorInvalidResourceHandle;
    return ev->complete.load(std::memory_order_acquire) || !ev->recorded.load(std::memory_order_relaxed)
               ? cudaSuccess
               : cudaErrorNotReady;
  }
  static cudaError_t elapsed(float* ms, cudaEvent_t start, cudaEvent_t stop) {
    FakeCuda& f = self();
    count(f.n_.elapsed);
    Event* a = f.event(start);
    Event* b = f.event(stop);
    if (a == nullptr || b == nullptr) return cudaErrorInvalidResourceHandle;
    if (!a->timing.load(std::memory_order_relaxed) || !b->timing.load(std::memory_order_relaxed))
      return cudaErrorInvalidResourceHandle;  // as CUDA for events made with cudaEventDisableTiming
    if (!a->complete.load(std::memory_order_acquire) || !b->complete.load(std::memory_order_acquire))
      return cudaErrorNotReady;
    const double ns = static_cast<double>(b->at_ns.load(std::memory_order_relaxed)) -
                      static_cast<double>(a->at_ns.load(std::memory_order_relaxed));
    *ms = static_cast<float>(ns / 1e6);
    return cudaSuccess;
  }
  static cudaError_t destroy(cudaEvent_t e) {
    FakeCuda& f = self();
    count(f.n_.destroy);
    Event* ev = f.event(e);
    if (ev == nullptr) return cudaErrorInvalidResourceHandle;
    ev->alive.store(false, std::memory_order_release);
    return cudaSuccess;
  }
  static cudaError_t get_device(int* device) {
    count(self().n_.get_device);
    *device = current_device();
    return cudaSuccess;
  }
  static cudaError_t set_device(int device) {
    FakeCuda& f = self();
    count(f.n_.set_device);
    if (device < 0 || device >= f.devices_) return cudaErrorInvalidDevice;
    current_device() = device;
    return cudaSuccess;
  }
  static cudaError_t stream_get_device(cudaStream_t s, int* device) {
    FakeCuda& f = self();
    count(f.n_.stream_get_device);
    if (!f.is_stream(s)) return cudaErrorInvalidResourceHandle;
    *device = device_of(s);
    return cudaSuccess;
  }
  static cudaError_t stream_is_capturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
    FakeCuda& f = self();
    count(f.n_.stream_is_capturing);
    *status = f.capturing_.load(std::memory_order_relaxed) == s ? cudaStreamCaptureStatusActive
                                                                : cudaStreamCaptureStatusNone;
    return cudaSuccess;
  }
  static cudaError_t exchange_capture_mode(cudaStreamCaptureMode*) {
    count(self().n_.exchange_capture_mode);
    return cudaSuccess;
  }
  static cudaError_t get_last_error() {
    count(self().n_.get_last_error);
    return cudaSuccess;
  }

  // The callbacks at the record call's entry (runtime, then the driver call it makes), and the
  // CUDA_EVENT record CUPTI keeps until a delivery.
  void cupti_record(Event* ev, std::uint64_t device_ns) {
    const auto runtime = static_cast<std::uint32_t>(next_correlation_.fetch_add(2, std::memory_order_relaxed));
    cuscope::detail::note_event_record(false, runtime);
    cuscope::detail::note_event_record(true, runtime + 1);
    const std::size_t i = cupti_made_.fetch_add(1, std::memory_order_relaxed);
    if (i >= kMaxEvents) return;
    cupti_records_[i].correlation = cupti_by_driver_.load(std::memory_order_relaxed) ? runtime + 1 : runtime;
    cupti_records_[i].device_ns = device_ns;
    cupti_records_[i].event = ev;
    cupti_records_[i].ready.store(true, std::memory_order_release);
  }

  static constexpr cuscope::detail::CudaCalls kCalls{&create,
                                                     &record,
                                                     &query,
                                                     &elapsed,
                                                     &destroy,
                                                     &get_device,
                                                     &set_device,
                                                     &stream_get_device,
                                                     &stream_is_capturing,
                                                     &exchange_capture_mode,
                                                     &get_last_error};

  const int devices_;
  std::unique_ptr<Event[]> events_;
  std::atomic<std::size_t> created_{0};
  std::atomic<std::uint64_t> clock_ns_{1'000'000'000};  // not 0: CUPTI gives 0 for "no timestamp"
  std::atomic<bool> complete_on_record_{true};
  std::atomic<std::int64_t> record_busy_ns_{0};
  std::atomic<bool> cupti_{false};
  std::atomic<bool> cupti_by_driver_{false};
  std::atomic<bool> cupti_holds_{false};
  std::atomic<std::uint64_t> next_correlation_{1001};
  std::unique_ptr<CuptiRecord[]> cupti_records_{new CuptiRecord[kMaxEvents]};
  std::atomic<std::size_t> cupti_made_{0};
  std::size_t cupti_delivered_ = 0;
  std::atomic<cudaStream_t> capturing_{nullptr};
  Counters n_;
  cuscope::detail::GpuProbe probe_;
};

}  // namespace cuscope_test
