#include "gateway/json_schema/json_string_formats.hpp"

#include <map>
#include <mutex>

#include "text/grammar/regex_automaton.hpp"

namespace troupe {

namespace {

const std::string year = "[0-9]{4}";
const std::string leap_year = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)";
const std::string date = "(?:" + year +
                         "-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|"
                         "02-(?:0[1-9]|1[0-9]|2[0-8]))|" +
                         leap_year + "-02-29)";
const std::string hour_minute = "(?:[01][0-9]|2[0-3]):[0-5][0-9]";
const std::string time = hour_minute + ":[0-5][0-9](?:\\.[0-9]{1,9})?(?:Z|[+-]" + hour_minute + ")";
const std::string count = "[0-9]{1,9}";
const std::string duration_date =
    "(?:" + count + "Y(?:" + count + "M)?(?:" + count + "D)?|" + count + "M(?:" + count + "D)?|" + count + "D)";
const std::string duration_time =
    "T(?:" + count + "H(?:" + count + "M)?(?:" + count + "S)?|" + count + "M(?:" + count + "S)?|" + count + "S)";
const std::string label = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,59}[A-Za-z0-9])?";
const std::string dns_label = "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?";
const std::string octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const std::string hex_group = "[0-9a-fA-F]{1,4}";
const std::string path_character = "(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-F]{2})";

std::string ipv6() {
  const std::string h = hex_group, g = "(?:" + h + ":)", tail = "(?::" + h + ")";
  return "(?:" + g + "{7}" + h + "|" + g + "{1,7}:|" + g + "{1,6}:" + h + "|" + g + "{1,5}" + tail + "{1,2}|" + g +
         "{1,4}" + tail + "{1,3}|" + g + "{1,3}" + tail + "{1,4}|" + g + "{1,2}" + tail + "{1,5}|" + h + ":" + tail +
         "{1,6}|:(?:" + tail + "{1,7}|:))";
}

const std::map<std::string, std::string, std::less<>>& patterns() {
  static const std::map<std::string, std::string, std::less<>> table = {
      {"date", date},
      {"time", time},
      {"date-time", date + "T" + time},
      {"duration", "P(?:" + duration_date + "(?:" + duration_time + ")?|" + duration_time + "|" + count + "W)"},
      {"email", "[A-Za-z0-9_+-]+(?:\\.[A-Za-z0-9_+-]+)*@(?:" + dns_label + "\\.)+[A-Za-z]{2,}"},
      {"uuid", "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"},
      {"uri", "https?://(?:" + dns_label + "\\.)*" + dns_label + "(?::[0-9]{1,5})?(?:/" + path_character +
                  "*)*(?:\\?(?:" + path_character + "|[/?])*)?(?:#(?:" + path_character + "|[/?])*)?"},
      {"hostname", label + "(?:\\." + label + "){0,3}"},
      {"ipv4", octet + "(?:\\." + octet + "){3}"},
      {"ipv6", ipv6()},
  };
  return table;
}

}  // namespace

result<std::string> format_pattern(std::string_view format) {
  auto found = patterns().find(format);
  if (found == patterns().end()) return error{"unsupported format '" + std::string(format) + "'"};
  return found->second;
}

result<byte_automaton> format_automaton(std::string_view format) {
  static std::mutex mutex;
  static std::map<std::string, byte_automaton, std::less<>> compiled;
  std::lock_guard lock(mutex);
  if (auto found = compiled.find(format); found != compiled.end()) return found->second;
  auto pattern = format_pattern(format);
  if (!pattern) return pattern.err();
  auto tree = parse_regex(*pattern);
  if (!tree) return error{"format '" + std::string(format) + "': " + tree.err().message};
  auto automaton = whole_match_automaton(*tree);
  if (!automaton) return error{"format '" + std::string(format) + "': " + automaton.err().message};
  return compiled.emplace(std::string(format), std::move(automaton).value()).first->second;
}

}  // namespace troupe
