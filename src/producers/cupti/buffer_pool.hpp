// producers/cupti/buffer_pool.hpp — the activity buffers cuscope hands CUPTI. Bounded in bytes
// (CUPTI 13.0 keeps a buffer per thread that calls CUDA, so the number out grows with the
// program's threads): large buffers while few are out, small ones past that, none past the budget
// (CUPTI then drops records and counts them; the pool counts its refusals). And zeroed before CUPTI
// gets them, so that CUPTI, told so (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER), never zeroes a
// buffer itself on the launching thread that asked for it (4 MiB, each time a flush has handed the
// thread's last one back): a buffer back from CUPTI is zeroed where its records were, by the thread
// that delivered it (the collector, a program thread that flushes, or CUPTI's own), and spare ones
// are made ahead, off the launching threads (keep_spares()).
//
// Never: hand out a buffer with a byte that is not zero, make one past the budget, or call CUPTI.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace cuscope::inline v0::detail {

class BufferPool {
 public:
  struct Limits {
    std::size_t large;         ///< bytes of a large buffer
    std::size_t small;         ///< bytes of a small one
    std::size_t large_budget;  ///< large buffers are made while every buffer made stays within this
    std::size_t budget;        ///< and small ones within this; then none
  };
  /// Room for every buffer the budget allows to be out at once is made here, so that take() and
  /// give_back() never allocate to keep track of them.
  explicit BufferPool(Limits limits) : limits_(limits) { out_.reserve(limits.budget / limits.small + 1); }
  /// Frees the buffers free now (one out with CUPTI is its taker's to give back first; cuscope's
  /// own pool lives as long as the process, since CUPTI may call back until it ends).
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  /// A zeroed buffer and its size in `*size`: a free one, else a new one; nullptr (size 0) past the
  /// budget, counted.
  std::uint8_t* take(std::size_t* size) noexcept;
  /// `buffer` (of `size` bytes) back, its first `valid` bytes written: zeroed there, and free again.
  /// A non-zero byte in the page past them (CUPTI wrote past what it said) has the whole buffer
  /// zeroed, counted (written_past_valid()). A buffer this pool did not hand out (of neither size:
  /// another client's; or one taken back by reclaim_out()) is left be.
  void give_back(std::uint8_t* buffer, std::size_t size, std::size_t valid) noexcept;
  /// Every buffer out, zeroed whole and free again; their bytes. Only where none can come back: CUPTI
  /// finalized (a buffer it never handed back is lost to it), no flush under way.
  std::size_t reclaim_out() noexcept;
  /// Buffers given back with bytes written past their valid ones (none expected).
  std::uint64_t written_past_valid() const { return written_past_valid_.load(std::memory_order_relaxed); }
  /// Makes zeroed buffers until `spares` are free, within the budget (for the collector's thread,
  /// so that a launching thread finds one ready).
  void keep_spares(std::size_t spares) noexcept;
  /// The buffers refused since the last call.
  std::uint64_t take_refused() noexcept { return refused_.exchange(0, std::memory_order_relaxed); }
  /// Every buffer made, out or free, in bytes.
  std::size_t bytes_made() const;
  /// Buffers free now.
  std::size_t free_count() const;
  /// Bytes of the buffers out now (handed out, not given back): with CUPTI, or with a thread
  /// delivering them.
  std::size_t bytes_out() const;

 private:
  struct Buffer {
    std::uint8_t* data;
    std::size_t size;
  };
  // The size of the next buffer, counted as made (the caller holds mutex_); 0 past the budget.
  std::size_t reserve_locked() noexcept;
  // `b`, zeroed, free for the next take() (freed, its bytes given back, when the list cannot grow).
  void keep(Buffer b) noexcept;
  // A new zeroed buffer of `bytes` reserved ones (no lock held); nullptr when memory runs out (the
  // reservation given back).
  std::uint8_t* make(std::size_t bytes) noexcept;

  const Limits limits_;
  mutable std::mutex mutex_;
  std::vector<Buffer> free_;    // guarded by mutex_
  std::vector<Buffer> out_;     // guarded by mutex_; its room made by the constructor
  std::size_t bytes_made_ = 0;  // guarded by mutex_
  std::atomic<std::uint64_t> refused_{0};
  std::atomic<std::uint64_t> written_past_valid_{0};
  static constexpr std::size_t kCheckedPastValid = 4096;
};

}  // namespace cuscope::inline v0::detail
