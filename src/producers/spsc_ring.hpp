// producers/spsc_ring.hpp — a bounded single-producer single-consumer queue of pointers.
// No lock, no allocation after construction; push fails (returns false) when full.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace cuscope::inline v0::detail {

template <class T>
class SpscRing {
 public:
  explicit SpscRing(std::size_t capacity_pow2) : mask_(capacity_pow2 - 1), slots_(new T[capacity_pow2]) {}

  bool push(T v) {
    const std::size_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_.load(std::memory_order_acquire) > mask_) return false;
    slots_[tail & mask_] = v;
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }
  /// The oldest element without removing it, or nullptr when empty (consumer only).
  T* front() {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_.load(std::memory_order_acquire)) return nullptr;
    return &slots_[head & mask_];
  }
  void pop() { head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
  bool pop(T& out) {
    T* f = front();
    if (f == nullptr) return false;
    out = *f;
    pop();
    return true;
  }

 private:
  const std::size_t mask_;
  std::unique_ptr<T[]> slots_;
  alignas(64) std::atomic<std::size_t> head_{0};
  alignas(64) std::atomic<std::size_t> tail_{0};
};

}  // namespace cuscope::inline v0::detail
