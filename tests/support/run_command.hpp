#pragma once
// Runs a shell command for a test (an oracle under Node, promtool, the troupe binary) and
// collects its exit code and standard output.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include <boost/test/unit_test.hpp>

namespace troupe::test {

struct command_result {
  int exit_code = -1;
  std::string output;
};

inline command_result run_command(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  BOOST_REQUIRE_MESSAGE(pipe, "cannot run: " + command);
  command_result r;
  std::array<char, 65536> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace troupe::test
