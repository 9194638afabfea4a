#pragma once
// How the gateway answers one request, from any thread.
#include <functional>
#include <string>
#include <vector>

#include "gateway/http/http_request.hpp"

namespace troupe::http {

// Answers one request. Thread-safe: any thread may call it (the gateway answers from actor
// threads); work is handed to the loop thread (uv_async). Calls after the client went
// away are ignored. Calls out of order (write() before start_stream(), anything after
// respond() or end()) are bugs and stop the process; fail() is allowed at any time.
class responder {
 public:
  virtual ~responder() = default;
  virtual void respond(int status, std::string content_type, std::string body, std::vector<header> extra = {}) = 0;
  virtual void start_stream(int status, std::string content_type, std::vector<header> extra = {}) = 0;  // chunked
  virtual void write(std::string chunk) = 0;  // one chunk of a started stream
  virtual void end() = 0;                     // last chunk; keep-alive continues
  // Ends the response with an error, whatever was sent so far: one not begun is answered
  // `status` with the JSON `error_body`; a started stream gets `data: <error_body>` and
  // `data: [DONE]` events and ends; one that ended stays as it is.
  virtual void fail(int status, std::string error_body) = 0;
  virtual bool closed() const = 0;  // the client disconnected
  // Called once, from the loop thread, if the client disconnects before end()/respond().
  virtual void on_close(std::function<void()> callback) = 0;
};

}  // namespace troupe::http
