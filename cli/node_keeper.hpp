#pragma once
// Keeps the node processes `troupe cluster up` started running: a thread that notices one
// has ended (killed, crashed) and starts it again after a backoff, then hands its new
// control port to `rejoin`, which joins it and gives it its part back. A node the head has
// lost although its process runs (stopped, hung: its heartbeats stopped) is killed first.
// A node that ends more than `max_restarts` times within the window is left down and said
// so: its replica's requests then fail with the scheduler's error once its stage timeout
// passes.
#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "actors/supervisor.hpp"
#include "base/result.hpp"
#include "cli/node_processes.hpp"

namespace troupe::cli {

class node_keeper {
 public:
  using rejoin_fn = std::function<status(const std::string& node, int port)>;

  node_keeper(node_processes& processes, std::filesystem::path config, restart_policy policy,
              std::chrono::seconds startup_timeout, rejoin_fn rejoin);
  ~node_keeper();
  node_keeper(const node_keeper&) = delete;
  node_keeper& operator=(const node_keeper&) = delete;

  // Stops watching; a restart under way finishes first.
  void stop();

  // The head lost node `node` (its agent went down): its process, if it still runs, is
  // killed and started again. Safe from any thread.
  void lost(const std::string& node);

 private:
  void run();
  void restart(const std::string& node, const std::string& how);

  node_processes& processes_;
  const std::filesystem::path config_;
  const restart_policy policy_;
  const std::chrono::seconds startup_timeout_;
  const rejoin_fn rejoin_;
  std::map<std::string, std::deque<std::chrono::steady_clock::time_point>> restarts_;
  std::atomic<bool> stopping_{false};
  std::mutex lost_mutex_;
  std::set<std::string> lost_;  // nodes to kill, from lost()
  std::thread thread_;
};

}  // namespace troupe::cli
