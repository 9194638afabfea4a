#include "cli/node_processes.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <regex>

#include "base/child_process_end.hpp"
#include "base/network_namespace.hpp"

namespace troupe::cli {
namespace {

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by ") + strsignal(WTERMSIG(status));
  return "stopped";
}

}  // namespace

result<int> node_processes::start(const std::filesystem::path& config, const std::string& name,
                                  std::chrono::steady_clock::time_point deadline) {
  int out[2];
  if (pipe(out) != 0) return error{"node " + name + ": pipe: " + std::string(strerror(errno))};
  // The node's network namespace (ip netns keeps a handle in /run/netns), and what the
  // child says when it cannot enter it: made here, since the child of a threaded process
  // may only make system calls before exec.
  const auto ns = netns_.find(name);
  const std::string netns_path = ns == netns_.end() ? "" : "/run/netns/" + ns->second;
  const std::string netns_failure =
      "troupe cluster up: node " + name + ": cannot enter its network namespace " + netns_path + "\n";
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return error{"node " + name + ": fork: " + std::string(strerror(errno))};
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);  // the parent died before prctl
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, nullptr);
    dup2(out[1], STDOUT_FILENO);
    // Nothing else of the head's: its sockets (UCX's, CAF's) have no close-on-exec. A node
    // started again held the head's UCX connection to another node: what the head closed
    // stayed open to that node, and the restarted node's death reset it.
    close_range(3, ~0U, 0);
    if (!netns_path.empty() && enter_network_namespace(netns_path.c_str()) != 0) {
      (void)!write(STDERR_FILENO, netns_failure.data(), netns_failure.size());
      _exit(126);
    }
    const std::string file = config.string();
    execl("/proc/self/exe", "troupe", "node", "--config", file.c_str(), "--name", name.c_str(), "--port", "0",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  children_.push_back({name, pid});
  std::string text;
  static const std::regex announced(": control on [^ ]*:(\\d+)\n");
  std::smatch m;
  while (!std::regex_search(text, m, announced)) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{out[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, int(left.count())) <= 0) {
      close(out[0]);
      return error{"node " + name + " did not start within the startup timeout"};
    }
    char buffer[256];
    const ssize_t n = read(out[0], buffer, sizeof buffer);
    if (n <= 0) {
      close(out[0]);
      int status = 0;
      waitpid(pid, &status, 0);
      children_.pop_back();
      return error{"node " + name + " " + exit_text(status) + " before it was up (its errors are above)"};
    }
    text.append(buffer, size_t(n));
  }
  close(out[0]);  // the node's later output goes nowhere; its log lines go to stderr
  const std::string announced_line = m[0].str();
  std::fprintf(stderr, "troupe cluster up: node %s (pid %d)%s", name.c_str(), int(pid), announced_line.c_str());
  return std::stoi(m[1]);
}

std::vector<std::pair<std::string, std::string>> node_processes::ended() {
  std::vector<std::pair<std::string, std::string>> gone;
  for (auto it = children_.begin(); it != children_.end();) {
    int status = 0;
    if (waitpid(it->pid, &status, WNOHANG) == it->pid) {
      gone.emplace_back(it->name, exit_text(status));
      it = children_.erase(it);
    } else {
      ++it;
    }
  }
  return gone;
}

void node_processes::kill_node(const std::string& name) {
  for (const child& c : children_)
    if (c.name == name) kill(c.pid, SIGKILL);
}

node_processes::~node_processes() {
  for (const child& c : children_) kill(c.pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (const child& c : children_) reap_or_kill(c.pid, deadline);
}

}  // namespace troupe::cli
