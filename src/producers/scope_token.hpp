// producers/scope_token.hpp — a scope's token (Scope::depth_), as enter() makes it and exit() reads
// it: the tree depth it opened at, what the entry did, and its frame's tag.
//
// Never here: code. The layout only; producers/scope.cpp makes and reads tokens.
#pragma once

#include <cstdint>

#include "model/range_tree.hpp"
#include "producers/outside_scopes.hpp"

namespace cuscope::inline v0::detail {

// A scope's token (Scope::depth_): the tree depth it opened at, what it did, and the tag of its
// frame (so that an end on another thread finds that very frame); or, for a scope entered outside
// the window and kept (kOutside), its entry's index + 1 and tag (producers/outside_scopes.hpp).
inline constexpr std::uint32_t kDepthMask = 0x3FF;
inline constexpr std::uint32_t kOverflow = 0x3FF;
static_assert(model::kHardMaxDepth < kOverflow);
inline constexpr std::uint32_t kRecorded = 1u << 10;
inline constexpr std::uint32_t kPushed = 1u << 11;
inline constexpr std::uint32_t kTimedGpu = 1u << 12;
inline constexpr std::uint32_t kTraced = 1u << 13;
inline constexpr unsigned kTagShift = 14;
static_assert(model::ThreadTree::kMaxTag <= (UINT32_MAX >> kTagShift));
static_assert((model::ThreadTree::kMaxTag << kTagShift) < kOutside);
static_assert(kOutsideIndexMask == kDepthMask && kOutsideTagShift == kTagShift,
              "outside_scopes.hpp's layout");
inline constexpr std::uint32_t kTokenBits = kRecorded | kPushed | kTimedGpu | kTraced | kOutside;

}  // namespace cuscope::inline v0::detail
