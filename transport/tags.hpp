#pragma once
// The one layout of a transport tag:
//
//   bits 63..56  channel   what the bytes are (residual rows, MoE dispatch, MoE combine)
//   bits 55..40  sender    who sent them (a stage or expert group index)
//   bits 39..0   sequence  the step id (wraps after 2^40 steps: decades at 1000 steps/s)
//
// A receiver picks its message by masking: one step's combined rows from every sender is
// receive(make_tag(channel::moe_combine, 0, step), channel_mask | sequence_mask, ...).
#include <cstdint>

namespace troupe {

enum class channel : uint8_t { residual = 1, moe_dispatch = 2, moe_combine = 3 };

inline constexpr uint64_t channel_mask = uint64_t{0xff} << 56;
inline constexpr uint64_t sender_mask = uint64_t{0xffff} << 40;
inline constexpr uint64_t sequence_mask = (uint64_t{1} << 40) - 1;

constexpr uint64_t make_tag(channel c, uint16_t sender, uint64_t sequence) {
  return uint64_t(c) << 56 | uint64_t(sender) << 40 | (sequence & sequence_mask);
}

constexpr channel tag_channel(uint64_t tag) { return channel(tag >> 56); }
constexpr uint16_t tag_sender(uint64_t tag) { return uint16_t(tag >> 40); }
constexpr uint64_t tag_sequence(uint64_t tag) { return tag & sequence_mask; }

}  // namespace troupe
