#pragma once
// Moving the calling thread into a network namespace as `ip netns exec` does: into the
// namespace, then into a mount namespace of its own where /sys is mounted again, since
// /sys/class/net lists the interfaces of the namespace that mounted sysfs (and UCX picks
// its TCP devices there). Only system calls, so a child of a threaded process may call
// them before exec. Each returns 0 or an errno value.
namespace troupe {

// Into the namespace at `path` (ip netns keeps one in /run/netns/NAME).
int enter_network_namespace(const char* path);

// Into a new, empty network namespace (only a loopback, down).
int enter_new_network_namespace();

}  // namespace troupe
