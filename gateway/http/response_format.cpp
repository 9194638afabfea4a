#include "gateway/http/response_format.hpp"

#include <http_parser.h>

#include <cstdio>
#include <ctime>

namespace troupe::http {

namespace {

// RFC 9110 IMF-fixdate, written by hand because strftime's names follow the locale.
std::string http_date() {
  static constexpr const char* days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::time_t now = std::time(nullptr);
  std::tm t;
  gmtime_r(&now, &t);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[t.tm_wday], t.tm_mday, months[t.tm_mon],
                t.tm_year + 1900, t.tm_hour, t.tm_min, t.tm_sec);
  return buf;
}

bool token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

void add_header(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ").append(value).append("\r\n");
}

}  // namespace

std::string format_head(int status, std::string_view content_type, framing f, size_t content_length, bool keep_alive,
                        const std::vector<header>& extra) {
  std::string_view reason = http_status_str(http_status(status));
  if (reason == "<unknown>") reason = "";
  std::string out = "HTTP/1.1 " + std::to_string(status) + " ";
  out.append(reason).append("\r\n");
  add_header(out, "Date", http_date());
  if (!content_type.empty()) add_header(out, "Content-Type", content_type);
  if (f == framing::length) add_header(out, "Content-Length", std::to_string(content_length));
  if (f == framing::chunked) add_header(out, "Transfer-Encoding", "chunked");
  if (!keep_alive) add_header(out, "Connection", "close");
  for (const header& h : extra) add_header(out, h.name, h.value);
  out.append("\r\n");
  return out;
}

std::string format_chunk(std::string_view data) {
  if (data.empty()) return {};
  char size[24];
  int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out(size, size_t(n));
  out.append(data).append("\r\n");
  return out;
}

std::string error_body(std::string_view message) {
  std::string out = R"({"error":{"message":")";
  for (char c : message) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out.append(escaped);
    } else {
      out.push_back(c);
    }
  }
  out.append(R"(","type":"invalid_request_error","param":null,"code":null}})");
  return out;
}

bool valid_header(const header& h) {
  if (h.name.empty()) return false;
  for (char c : h.name)
    if (!token_char(c)) return false;
  return h.value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos;
}

std::string sse_error_end(std::string_view error_json) {
  return "data: " + std::string(error_json) + "\n\ndata: [DONE]\n\n";
}

}  // namespace troupe::http
