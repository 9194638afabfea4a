#include "base/network_namespace.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>

namespace troupe {
namespace {

// A mount namespace of the caller's own with sysfs mounted afresh, describing the network
// namespace the caller is in now; mounts made here do not leak to the rest of the machine.
int own_sysfs() {
  if (unshare(CLONE_NEWNS) != 0) return errno;
  if (mount("", "/", nullptr, MS_SLAVE | MS_REC, nullptr) != 0) return errno;
  umount2("/sys", MNT_DETACH);
  if (mount("sysfs", "/sys", "sysfs", 0, nullptr) != 0) return errno;
  return 0;
}

}  // namespace

int enter_network_namespace(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const int entered = setns(fd, CLONE_NEWNET) == 0 ? 0 : errno;
  close(fd);
  return entered != 0 ? entered : own_sysfs();
}

int enter_new_network_namespace() {
  if (unshare(CLONE_NEWNET) != 0) return errno;
  return own_sysfs();
}

}  // namespace troupe
