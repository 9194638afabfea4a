#pragma once
// The cluster a chaos run drives: `troupe cluster up FILE --port 0`, a child process of
// this one with its output in a log file, its gateway's address read from there, its
// node processes found in /proc (the `troupe node` children of its head), and its health
// asked over HTTP. It is stopped with SIGTERM when the object goes.
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "base/result.hpp"
#include "bench/http_client.hpp"

namespace troupe::chaos {

class cluster_under_test {
 public:
  // Starts it and waits until it serves (within `patience`).
  static result<std::unique_ptr<cluster_under_test>> start(const std::filesystem::path& conf,
                                                           const std::filesystem::path& log,
                                                           std::chrono::seconds patience);
  ~cluster_under_test();
  cluster_under_test(const cluster_under_test&) = delete;
  cluster_under_test& operator=(const cluster_under_test&) = delete;

  const bench::server_address& server() const { return server_; }
  // The pid of the head (`troupe cluster up`), which runs the gateway's node.
  int head_pid() const { return pid_; }
  // The pid of node `name`'s process, 0 while none runs.
  int node_pid(const std::string& name) const;
  // GET /health answered 200: every part of some replica is ready.
  bool healthy() const;
  // The log so far (the head's output, with its nodes').
  std::string log() const;

 private:
  cluster_under_test(int pid, std::filesystem::path log) : pid_(pid), log_(std::move(log)) {}

  int pid_;
  std::filesystem::path log_;
  bench::server_address server_;
};

}  // namespace troupe::chaos
