#pragma once
// The node processes `troupe cluster up` starts on this machine (the nodes whose port is
// 0): `troupe node --config FILE --name NAME` each, in its network namespace if it has one
// (`netns`), their stderr passed through, the control port each picked read from its
// first line of output. They end with SIGTERM when
// this object goes, and with SIGTERM of their own if this process dies. One thread at a
// time uses it.
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace troupe::cli {

class node_processes {
 public:
  // `netns`: the network namespace (ip netns) of each node that has one, by name.
  explicit node_processes(std::map<std::string, std::string> netns = {}) : netns_(std::move(netns)) {}
  node_processes(const node_processes&) = delete;
  node_processes& operator=(const node_processes&) = delete;
  ~node_processes();

  // Starts node `name` and waits until it prints its control port (or exits, or the
  // deadline passes: an error that says which).
  result<int> start(const std::filesystem::path& config, const std::string& name,
                    std::chrono::steady_clock::time_point deadline);

  // The nodes whose process has ended since the last call, with how it ended ("was killed
  // by Killed"); their processes are reaped.
  std::vector<std::pair<std::string, std::string>> ended();

  // Kills node `name`'s process (SIGKILL), for one that started but could not be joined:
  // ended() reports it next.
  void kill_node(const std::string& name);

 private:
  struct child {
    std::string name;
    int pid;
  };
  const std::map<std::string, std::string> netns_;
  std::vector<child> children_;
};

}  // namespace troupe::cli
