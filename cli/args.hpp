#pragma once
// Command-line flags of one subcommand: `--name value` pairs, bare `--switch`es and
// `--list a b c` flags whose values run to the next flag. Every flag must be consumed;
// whatever is left over is reported as unknown.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace troupe::cli {

class args {
 public:
  // `switches` lists the flags that take no value, `lists` those that take one or more
  // (joined with spaces).
  static result<args> parse(int argc, char** argv, const std::vector<std::string>& switches,
                            const std::vector<std::string>& lists = {});

  std::optional<std::string> take(const std::string& name);
  result<int> take_int(const std::string& name, int fallback);
  result<double> take_double(const std::string& name, double fallback);  // "inf" too
  result<std::vector<int>> take_int_list(const std::string& name);
  bool take_switch(const std::string& name);
  // An error naming the first flag nobody took, if any.
  status finish() const;

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace troupe::cli
