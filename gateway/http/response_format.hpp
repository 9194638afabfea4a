#pragma once
// The bytes of HTTP/1.1 responses: status line and headers, chunk framing, and the
// OpenAI-shaped error body the server uses for the errors it answers itself.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http/http_request.hpp"

namespace troupe::http {

enum class framing {
  length,       // Content-Length
  chunked,      // Transfer-Encoding: chunked
  until_close,  // HTTP/1.0 streams: the body ends when the connection does
};

std::string format_head(int status, std::string_view content_type, framing f, size_t content_length, bool keep_alive,
                        const std::vector<header>& extra);
// One chunk of a chunked body; empty data gives nothing (an empty chunk would end the body).
std::string format_chunk(std::string_view data);
inline constexpr std::string_view last_chunk = "0\r\n\r\n";
inline constexpr std::string_view continue_line = "HTTP/1.1 100 Continue\r\n\r\n";

// {"error":{"message":"...","type":"invalid_request_error","param":null,"code":null}}
std::string error_body(std::string_view message);

// The end of a server-sent event stream that failed: `data: <error_json>` then
// `data: [DONE]`, as OpenAI's API ends one.
std::string sse_error_end(std::string_view error_json);

// A header the server can send as it is: a token name, no line breaks in the value.
bool valid_header(const header& h);

}  // namespace troupe::http
