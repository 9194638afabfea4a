#pragma once
// `troupe serve` as a child process on a free port, for tests that talk to the real
// server: started by the constructor (which waits for its "serving ... on" line and reads
// the port from it), stopped with SIGTERM by the destructor.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

namespace troupe::test {

class serve_process {
 public:
  // `args` follow `troupe serve`; "--port 0" is added.
  explicit serve_process(std::vector<std::string> args, std::chrono::seconds startup = std::chrono::seconds(60)) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::close(out[1]);
      std::vector<std::string> all{TROUPE_BINARY, "serve", "--port", "0"};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    stdout_ = out[0];
    read_port(startup);
  }
  ~serve_process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (stdout_ >= 0) ::close(stdout_);
  }
  serve_process(const serve_process&) = delete;
  serve_process& operator=(const serve_process&) = delete;

  int port() const { return port_; }  // 0 when the server did not come up
  pid_t pid() const { return pid_; }
  const std::string& output() const { return output_; }

 private:
  void read_port(std::chrono::seconds startup) {
    const std::string marker = " on http://127.0.0.1:";
    const auto deadline = std::chrono::steady_clock::now() + startup;
    while (std::chrono::steady_clock::now() < deadline) {
      const size_t at = output_.find(marker);
      if (at != std::string::npos && output_.find('\n', at) != std::string::npos) {
        port_ = std::stoi(output_.substr(at + marker.size()));
        return;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{stdout_, POLLIN, 0};
      if (::poll(&p, 1, int(std::max<long>(1, left.count()))) != 1) return;
      char buf[4096];
      const ssize_t n = ::read(stdout_, buf, sizeof buf);
      if (n <= 0) return;  // the server exited
      output_.append(buf, size_t(n));
    }
  }

  pid_t pid_ = -1;
  int stdout_ = -1;
  int port_ = 0;
  std::string output_;
};

}  // namespace troupe::test
