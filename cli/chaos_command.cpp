// `troupe chaos run FILE [--report PATH] [--log PATH]`: runs the drills of a
// chaos/drills.conf against the cluster it names (started here with `troupe cluster up`,
// its output in the log), prints the report table, writes it to PATH when given, and exits
// 0 when every drill passed, 1 when one did not, 2 for a bad file.
#include <cstdio>
#include <fstream>
#include <string>

#include "chaos/chaos_report.hpp"
#include "chaos/drill_run.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"

namespace troupe::cli {
namespace {

int fail(const std::string& message, int code) {
  std::fprintf(stderr, "troupe chaos run: %s\n", message.c_str());
  return code;
}

}  // namespace

int chaos_command(int argc, char** argv) {
  if (argc < 2 || std::string(argv[0]) != "run" || argv[1][0] == '-')
    return fail("usage: troupe chaos run FILE [--report PATH] [--log PATH]", 2);
  auto a = args::parse(argc - 2, argv + 2, {});
  if (!a) return fail(a.err().message, 2);
  const std::string report_path = a->take("--report").value_or("");
  const std::string log_path = a->take("--log").value_or("chaos_cluster.log");
  if (auto s = a->finish(); !s) return fail(s.err().message, 2);
  auto spec = chaos::read_chaos_spec(argv[1]);
  if (!spec) return fail(spec.err().message, 2);
  std::fprintf(stderr, "troupe chaos run: starting the cluster of %s (its output in %s)\n", spec->cluster.c_str(),
               log_path.c_str());
  auto run = chaos::run_chaos(*spec, log_path);
  if (!run) return fail(run.err().message, 1);
  const std::string report = chaos::report_markdown(*spec, *run);
  std::fputs(report.c_str(), stdout);
  if (!report_path.empty()) {
    std::ofstream out(report_path);
    out << report;
    if (!out) return fail("could not write " + report_path, 1);
  }
  return run->violations.empty() ? 0 : 1;
}

}  // namespace troupe::cli
