#include "cluster/conf_values.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace troupe {
namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

std::vector<std::string> split(const std::string& s, char by) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at; (at = s.find(by, start)) != std::string::npos; start = at + 1)
    parts.push_back(s.substr(start, at - start));
  parts.push_back(s.substr(start));
  return parts;
}

bool parse_int(const std::string& text, int& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

std::string prefix(const ini_file& file, const ini_entry& e) { return file.where(e.line) + "`" + e.key + "` "; }

bool is_host_name(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (const auto& label : split(s, '.')) {
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    for (char c : label)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
  }
  return true;
}

// No model has a million layers or experts; the bound keeps `last + 1` arithmetic safe.
constexpr int max_index = 999999;

// One "node[:gpu]:first-last" item.
result<placement> placement_of(const std::string& item, int line) {
  const auto parts = split(item, ':');
  if (parts.size() < 2 || parts.size() > 3) return error{"expected node[:gpu]:first-last"};
  placement p{trim(parts[0]), std::nullopt, 0, std::nullopt, line};
  if (p.node.empty()) return error{"the node name is missing"};
  if (parts.size() == 3) {
    int gpu = 0;
    if (!parse_int(trim(parts[1]), gpu) || gpu < 0) return error{"the GPU must be an ordinal (0, 1, ...)"};
    p.gpu = gpu;
  }
  const auto ends = split(trim(parts.back()), '-');
  int first = 0, last = 0;
  if (ends.size() != 2 || !parse_int(trim(ends[0]), first) || !parse_int(trim(ends[1]), last) || last > max_index)
    return error{"the range must be first-last, two numbers from 0 to " + std::to_string(max_index) +
                 " (both included)"};
  if (first > last)
    return error{"the range runs backwards (" + std::to_string(first) + " > " + std::to_string(last) + ")"};
  p.first = first;
  p.last = last;
  return p;
}

}  // namespace

result<int> integer_value(const ini_file& file, const ini_entry& e, int min, int max) {
  int v = 0;
  if (!parse_int(e.value, v) || v < min || v > max) {
    std::string range = max == std::numeric_limits<int>::max()
                            ? std::to_string(min) + " or more"
                            : "from " + std::to_string(min) + " to " + std::to_string(max);
    return error{prefix(file, e) + "must be an integer " + range + ", not \"" + e.value + "\""};
  }
  return v;
}

result<double> non_negative_value(const ini_file& file, const ini_entry& e) {
  double v = 0;
  auto [end, ec] = std::from_chars(e.value.data(), e.value.data() + e.value.size(), v);
  if (e.value.empty() || ec != std::errc() || end != e.value.data() + e.value.size() || !std::isfinite(v) || v < 0)
    return error{prefix(file, e) + "must be a number, 0 or more, not \"" + e.value + "\""};
  return v;
}

status check_name(const ini_file& file, int line, const std::string& what, const std::string& name) {
  bool good = !name.empty();
  for (char c : name) good = good && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
  if (good) return ok();
  return error{file.where(line) + "a " + what + " name is lowercase letters, digits, '_' and '-', not \"" + name +
               "\""};
}

status check_address(const ini_file& file, const ini_entry& e) {
  unsigned char bytes[16];
  if (inet_pton(AF_INET, e.value.c_str(), bytes) == 1 || inet_pton(AF_INET6, e.value.c_str(), bytes) == 1) return ok();
  // All digits and dots is meant as IPv4 (10.0.0.256 is a mistake, not a host name).
  const bool ipv4_like = e.value.find_first_not_of("0123456789.") == std::string::npos;
  if (!ipv4_like && e.value.find(':') == std::string::npos && is_host_name(e.value)) return ok();
  return error{prefix(file, e) + "must be a host name or an IPv4 or IPv6 address, not \"" + e.value + "\""};
}

std::string address_key(const std::string& address) {
  unsigned char bytes[16];
  char text[INET6_ADDRSTRLEN];
  for (int family : {AF_INET, AF_INET6})
    if (inet_pton(family, address.c_str(), bytes) == 1) return inet_ntop(family, bytes, text, sizeof text);
  std::string lower = address;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

result<std::vector<int>> devices_value(const ini_file& file, const ini_entry& e) {
  if (e.value == "cpu") return std::vector<int>{};
  if (e.value == "cuda") return std::vector<int>{0};
  const std::string expected = "must be cpu, cuda or cuda:ORDINALS (cuda:0,1), not \"" + e.value + "\"";
  if (e.value.rfind("cuda:", 0) != 0) return error{prefix(file, e) + expected};
  std::vector<int> gpus;
  for (const auto& text : split(e.value.substr(5), ',')) {
    int gpu = 0;
    if (!parse_int(trim(text), gpu) || gpu < 0) return error{prefix(file, e) + expected};
    for (int g : gpus)
      if (g == gpu) return error{prefix(file, e) + "lists GPU " + std::to_string(gpu) + " twice"};
    gpus.push_back(gpu);
  }
  return gpus;
}

result<std::vector<placement>> placements_value(const ini_file& file, const ini_entry& e) {
  std::vector<placement> out;
  for (const auto& text : split(e.value, ',')) {
    const std::string item = trim(text);
    auto p = placement_of(item, e.line);
    if (!p) return error{prefix(file, e) + "item \"" + item + "\": " + p.err().message + " (as in a:0-23, b:1:24-47)"};
    out.push_back(std::move(*p));
  }
  return out;
}

}  // namespace troupe
