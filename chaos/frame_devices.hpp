#pragma once
// The two ends a chaos::delay_line joins on a node's link: a packet socket on the link's
// bridge end and a tap device in the run's bridge. Both pass each frame with its 10-byte
// virtio header (the frame's GSO and checksum-offload state), so that the 64 KiB frames a
// veth carries, and frames whose checksum the sender left to the device, cross intact.
// Each returns a descriptor the caller closes.
#include <string>

#include "base/result.hpp"

namespace troupe::chaos {

// A tap device named `name` in the calling thread's network namespace, gone when the
// descriptor is closed.
result<int> open_tap(const std::string& name);

// A packet socket on the interface `name`: it reads every frame the interface receives (none
// it sends, its own writes among them), and what it writes the interface sends.
result<int> open_packet_socket(const std::string& interface);

}  // namespace troupe::chaos
