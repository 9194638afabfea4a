#include "chaos/cluster_under_test.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <regex>
#include <sstream>
#include <thread>

#include "base/child_process_end.hpp"
#include "base/read_file.hpp"

namespace troupe::chaos {
namespace {

// Arguments of /proc/PID/cmdline, empty when it ended meanwhile. The /proc files are read
// with read_text_file, which turns a process ending mid-read (ESRCH) into an error: a
// stream iterator would throw it.
std::vector<std::string> command_line(const std::string& pid) {
  auto text = read_text_file("/proc/" + pid + "/cmdline");
  std::vector<std::string> args;
  if (!text) return args;
  std::istringstream in(*text);
  for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
  return args;
}

// The parent pid in /proc/PID/stat (after the parenthesised name, which may hold spaces);
// 0 when it ended meanwhile.
int parent_of(const std::string& pid) {
  auto text = read_text_file("/proc/" + pid + "/stat");
  if (!text) return 0;
  const std::string& stat = *text;
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  char state;
  int ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

}  // namespace

result<std::unique_ptr<cluster_under_test>> cluster_under_test::start(const std::filesystem::path& conf,
                                                                      const std::filesystem::path& log,
                                                                      std::chrono::seconds patience) {
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return error{"the cluster's log " + log.string() + ": " + strerror(errno)};
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(out);
    return error{std::string("fork: ") + strerror(errno)};
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
    const std::string file = conf.string();
    execl("/proc/self/exe", "troupe", "cluster", "up", file.c_str(), "--port", "0", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out);
  std::unique_ptr<cluster_under_test> c(new cluster_under_test(pid, log));
  static const std::regex serving(" on (http://[^ ]+) ");
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (;;) {
    std::smatch m;
    const std::string text = c->log();
    if (std::regex_search(text, m, serving)) {
      auto server = bench::parse_base_url(m[1].str());
      if (!server) return server.err();
      c->server_ = *server;
      return c;
    }
    if (waitpid(pid, nullptr, WNOHANG) == pid) {
      c->pid_ = 0;
      return error{"troupe cluster up ended before it served; its log " + log.string() + ":\n" + text};
    }
    if (std::chrono::steady_clock::now() > deadline)
      return error{"troupe cluster up did not serve within " + std::to_string(patience.count()) + " s; its log " +
                   log.string()};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

cluster_under_test::~cluster_under_test() {
  if (pid_ == 0) return;
  kill(pid_, SIGTERM);
  reap_or_kill(pid_, std::chrono::steady_clock::now() + std::chrono::seconds(30));
}

int cluster_under_test::node_pid(const std::string& name) const {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos || parent_of(pid) != pid_) continue;
    const auto args = command_line(pid);
    for (size_t i = 0; i + 4 < args.size(); ++i)  // troupe node --config FILE --name NAME ...
      if (args[i] == "node" && args[i + 3] == "--name" && args[i + 4] == name) return std::stoi(pid);
  }
  return 0;
}

bool cluster_under_test::healthy() const {
  bench::http_client http(server_, std::chrono::milliseconds(2000));
  auto status = http.request("GET", server_.path_prefix + "/health", "", "", [](int, std::string_view) {});
  return status && *status == 200;
}

std::string cluster_under_test::log() const {
  auto text = read_text_file(log_);
  return text ? *text : std::string();
}

}  // namespace troupe::chaos
