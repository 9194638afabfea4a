#include "cli/node_keeper.hpp"

#include <cstdio>

namespace troupe::cli {
namespace {

// How often the thread looks for ended processes: a dead node is noticed within this.
constexpr auto poll_interval = std::chrono::milliseconds(50);

}  // namespace

node_keeper::node_keeper(node_processes& processes, std::filesystem::path config, restart_policy policy,
                         std::chrono::seconds startup_timeout, rejoin_fn rejoin)
    : processes_(processes),
      config_(std::move(config)),
      policy_(policy),
      startup_timeout_(startup_timeout),
      rejoin_(std::move(rejoin)),
      thread_([this] { run(); }) {}

node_keeper::~node_keeper() { stop(); }

void node_keeper::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void node_keeper::lost(const std::string& node) {
  std::lock_guard lock(lost_mutex_);
  lost_.insert(node);
}

void node_keeper::run() {
  while (!stopping_) {
    std::set<std::string> lost;
    {
      std::lock_guard lock(lost_mutex_);
      lost.swap(lost_);
    }
    for (const std::string& node : lost) {
      std::fprintf(stderr, "troupe cluster up: lost node %s; killing its process to start it again\n", node.c_str());
      processes_.kill_node(node);
    }
    for (const auto& [node, how] : processes_.ended()) restart(node, how);
    std::this_thread::sleep_for(poll_interval);
  }
}

void node_keeper::restart(const std::string& node, const std::string& how) {
  auto& times = restarts_[node];
  const auto now = std::chrono::steady_clock::now();
  while (!times.empty() && now - times.front() > policy_.window) times.pop_front();
  if (int(times.size()) >= policy_.max_restarts) {
    std::fprintf(stderr,
                 "troupe cluster up: node %s %s (%zu ends within %lld s); it is left down (its parts are not "
                 "ready in /health)\n",
                 node.c_str(), how.c_str(), times.size() + 1,
                 static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(policy_.window).count()));
    return;
  }
  times.push_back(now);
  std::fprintf(stderr, "troupe cluster up: node %s %s; starting it again\n", node.c_str(), how.c_str());
  std::this_thread::sleep_for(policy_.backoff);
  if (stopping_) return;
  auto port = processes_.start(config_, node, std::chrono::steady_clock::now() + startup_timeout_);
  status back = port ? rejoin_(node, *port) : status{port.err()};
  {
    // The head lost the dead process's agent meanwhile: that news is about the predecessor,
    // and acting on it would kill the process just started.
    std::lock_guard lock(lost_mutex_);
    lost_.erase(node);
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - now);
  if (back)
    std::fprintf(stderr, "troupe cluster up: node %s is back after %lld ms\n", node.c_str(),
                 static_cast<long long>(took.count()));
  else {
    std::fprintf(stderr, "troupe cluster up: node %s could not be started again: %s\n", node.c_str(),
                 back.err().message.c_str());
    processes_.kill_node(node);  // reaped as ended, and tried again
  }
}

}  // namespace troupe::cli
