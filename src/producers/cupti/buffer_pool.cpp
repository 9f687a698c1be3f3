// producers/cupti/buffer_pool.cpp — see buffer_pool.hpp.
#include "producers/cupti/buffer_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace cuscope::inline v0::detail {

BufferPool::~BufferPool() {
  for (const Buffer& b : free_) std::free(b.data);
}

std::size_t BufferPool::reserve_locked() noexcept {
  const std::size_t bytes =
      bytes_made_ + limits_.large <= limits_.large_budget ? limits_.large : limits_.small;
  if (bytes_made_ + bytes > limits_.budget) return 0;
  bytes_made_ += bytes;
  return bytes;
}

std::uint8_t* BufferPool::make(std::size_t bytes) noexcept {
  auto* data = static_cast<std::uint8_t*>(std::aligned_alloc(8, bytes));
  if (data != nullptr) {
    std::memset(data, 0, bytes);  // every page touched here, where CUPTI would have zeroed it
    return data;
  }
  std::lock_guard lock(mutex_);
  bytes_made_ -= bytes;
  return nullptr;
}

std::uint8_t* BufferPool::take(std::size_t* size) noexcept {
  std::size_t bytes = 0;
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      const Buffer b = free_.back();
      free_.pop_back();
      out_.push_back(b);  // within the room the constructor made: no allocation
      *size = b.size;
      return b.data;
    }
    bytes = reserve_locked();
  }
  // None free: made here, outside the lock (another thread's take() does not wait for it).
  std::uint8_t* data = bytes != 0 ? make(bytes) : nullptr;
  // CUPTI drops the records of a queue it has no buffer for, and counts them (dropped records).
  if (data == nullptr) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    *size = 0;
    return nullptr;
  }
  {
    std::lock_guard lock(mutex_);
    out_.push_back({data, bytes});
  }
  *size = bytes;
  return data;
}

void BufferPool::give_back(std::uint8_t* buffer, std::size_t size, std::size_t valid) noexcept {
  // Not one of this pool's sizes: another client's (the bench switches CUPTI's buffer callbacks
  // between cuscope and its own), not ours to keep, count or free.
  if (buffer == nullptr || (size != limits_.large && size != limits_.small)) return;
  {
    std::lock_guard lock(mutex_);
    const auto it =
        std::find_if(out_.begin(), out_.end(), [buffer](const Buffer& b) { return b.data == buffer; });
    if (it == out_.end()) return;  // not handed out by this pool, or taken back by reclaim_out()
    *it = out_.back();
    out_.pop_back();
  }
  valid = std::min(valid, size);
  // CUPTI writes no further than its valid bytes, which are zeroed again. Checked past them, a
  // page's worth: a byte there that is not zero has the whole buffer zeroed, and is counted.
  const std::size_t checked = std::min(size, valid + kCheckedPastValid);
  if (std::any_of(buffer + valid, buffer + checked, [](std::uint8_t b) { return b != 0; })) {
    written_past_valid_.fetch_add(1, std::memory_order_relaxed);
    valid = size;
  }
  std::memset(buffer, 0, valid);
  keep({buffer, size});
}

void BufferPool::keep(Buffer b) noexcept {
  std::lock_guard lock(mutex_);
  try {
    free_.push_back(b);
  } catch (...) {  // out of memory for the list: the buffer goes, and is made again when needed
    bytes_made_ -= b.size;
    std::free(b.data);
  }
}

void BufferPool::keep_spares(std::size_t spares) noexcept {
  for (;;) {
    std::size_t bytes = 0;
    {
      std::lock_guard lock(mutex_);
      if (free_.size() >= spares) return;
      bytes = reserve_locked();
    }
    if (bytes == 0) return;            // the budget is spent
    std::uint8_t* data = make(bytes);  // outside the lock: a take() meanwhile does not wait
    if (data == nullptr) return;
    keep({data, bytes});
  }
}

std::size_t BufferPool::bytes_made() const {
  std::lock_guard lock(mutex_);
  return bytes_made_;
}

std::size_t BufferPool::free_count() const {
  std::lock_guard lock(mutex_);
  return free_.size();
}

std::size_t BufferPool::bytes_out() const {
  std::lock_guard lock(mutex_);
  std::size_t bytes = 0;
  for (const Buffer& b : out_) bytes += b.size;
  return bytes;
}

std::size_t BufferPool::reclaim_out() noexcept {
  std::size_t bytes = 0;
  for (;;) {
    Buffer b{};
    {
      std::lock_guard lock(mutex_);
      if (out_.empty()) return bytes;
      b = out_.back();
      out_.pop_back();
    }
    std::memset(b.data, 0, b.size);  // what CUPTI wrote there is not known: all of it
    bytes += b.size;
    keep(b);
  }
}

}  // namespace cuscope::inline v0::detail
