#include "gateway/http/request_parser.hpp"

#include <utility>

#include "base/check.hpp"

namespace troupe::http {

namespace {

request_parser& self(http_parser* p) { return *static_cast<request_parser*>(p->data); }

void trim_trailing_space(std::string& s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
}

// Splits an origin-form ("/v1/models?x=1") or absolute-form ("http://host/v1") target.
void split_target(std::string_view target, request& r) {
  target = target.substr(0, target.find('#'));
  if (size_t scheme = target.find("://"); !target.starts_with('/') && scheme != std::string_view::npos) {
    size_t after_host = target.find_first_of("/?", scheme + 3);
    target = after_host == std::string_view::npos ? std::string_view() : target.substr(after_host);
  }
  size_t q = target.find('?');
  std::string_view path = target.substr(0, q);
  r.path = path.empty() ? std::string_view("/") : path;
  if (q != std::string_view::npos) r.query = target.substr(q + 1);
}

}  // namespace

request_parser::request_parser(size_t max_header_bytes, size_t max_body_bytes)
    : max_header_bytes_(max_header_bytes), max_body_bytes_(max_body_bytes) {
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
}

size_t request_parser::feed(std::string_view data) {
  if (complete_ || failed() || data.empty()) return 0;
  static const http_parser_settings callbacks = [] {
    http_parser_settings s;
    http_parser_settings_init(&s);
    s.on_message_begin = on_message_begin;
    s.on_url = on_url;
    s.on_header_field = on_header_field;
    s.on_header_value = on_header_value;
    s.on_headers_complete = on_headers_complete;
    s.on_body = on_body;
    s.on_message_complete = on_message_complete;
    return s;
  }();
  size_t used = http_parser_execute(&parser_, &callbacks, data.data(), data.size());
  http_errno e = HTTP_PARSER_ERRNO(&parser_);
  if (failed() || e == HPE_PAUSED) return used;
  if (e == HPE_HEADER_OVERFLOW) {
    fail(431, "request headers too large");
  } else if (e != HPE_OK) {
    fail(400, std::string("malformed request: ") + http_errno_description(e));
  } else if (!complete_ && used != data.size()) {
    // http-parser stops early only on an error or at the end of a request: should it
    // ever do otherwise, fail rather than be fed the same bytes again.
    fail(400, "malformed request");
  }
  return used;
}

bool request_parser::take_continue() { return std::exchange(continue_, false); }

parsed_request request_parser::take() {
  TROUPE_CHECK(complete_, "take() without a complete request");
  parsed_request r = std::move(current_);
  current_ = {};
  complete_ = false;
  continue_ = false;
  http_parser_pause(&parser_, 0);
  return r;
}

bool request_parser::count_header_bytes(size_t n) {
  header_bytes_ += n;
  if (header_bytes_ <= max_header_bytes_) return true;
  fail(431, "request headers too large");
  return false;
}

int request_parser::fail(int status, std::string message) {
  if (!failed()) {
    error_status_ = status;
    error_message_ = std::move(message);
  }
  return -1;  // any value but 0, 1 and 2 makes http-parser stop with an error
}

int request_parser::on_message_begin(http_parser* p) {
  request_parser& s = self(p);
  s.current_ = {};
  s.url_.clear();
  s.header_bytes_ = 0;
  s.in_value_ = false;
  return 0;
}

int request_parser::on_url(http_parser* p, const char* at, size_t n) {
  request_parser& s = self(p);
  if (!s.count_header_bytes(n)) return -1;
  s.url_.append(at, n);
  return 0;
}

int request_parser::on_header_field(http_parser* p, const char* at, size_t n) {
  request_parser& s = self(p);
  std::vector<header>& headers = s.current_.message.headers;
  bool fresh = s.in_value_ || headers.empty();
  if (!s.count_header_bytes(n + (fresh ? 4 : 0))) return -1;  // 4: ": " and CRLF
  if (fresh) headers.emplace_back();
  s.in_value_ = false;
  headers.back().name.append(at, n);
  return 0;
}

int request_parser::on_header_value(http_parser* p, const char* at, size_t n) {
  request_parser& s = self(p);
  if (!s.count_header_bytes(n)) return -1;
  s.in_value_ = true;
  s.current_.message.headers.back().value.append(at, n);
  return 0;
}

int request_parser::on_headers_complete(http_parser* p) {
  request_parser& s = self(p);
  request& r = s.current_.message;
  if (p->http_major != 1) return s.fail(505, "HTTP version not supported");
  for (header& h : r.headers) {
    // RFC 9112 5.1: whitespace before the colon is refused, lest a proxy read it otherwise.
    if (h.name.find_first_of(" \t") != std::string::npos)
      return s.fail(400, "malformed request: whitespace in the header name \"" + h.name + "\"");
    trim_trailing_space(h.value);
  }
  r.method = http_method_str(http_method(p->method));
  split_target(s.url_, r);
  bool has_length = p->flags & F_CONTENTLENGTH;
  if (has_length && p->content_length > s.max_body_bytes_) return s.fail(413, "request body too large");
  bool has_body = (p->flags & F_CHUNKED) || (has_length && p->content_length > 0);
  s.continue_ = has_body && p->http_minor >= 1 && equals_ignoring_case(r.header_value("Expect"), "100-continue");
  return 0;
}

int request_parser::on_body(http_parser* p, const char* at, size_t n) {
  request_parser& s = self(p);
  std::string& body = s.current_.message.body;
  if (n > s.max_body_bytes_ - body.size()) return s.fail(413, "request body too large");
  body.append(at, n);
  return 0;
}

int request_parser::on_message_complete(http_parser* p) {
  request_parser& s = self(p);
  s.current_.http_1_0 = p->http_minor == 0;
  s.current_.keep_alive = http_should_keep_alive(p) && !p->upgrade && !s.current_.http_1_0;
  s.complete_ = true;
  http_parser_pause(p, 1);
  return 0;
}

}  // namespace troupe::http
