#pragma once
// Work handed to the event loop's thread from any thread, through one uv_async handle.
// Responders share it and may outlive the server: once closed, posted work is dropped.
#include <uv.h>

#include <functional>
#include <mutex>
#include <vector>

namespace troupe::http {

class loop_inbox {
 public:
  // On the loop's thread, or before that thread starts.
  explicit loop_inbox(uv_loop_t* loop);
  loop_inbox(const loop_inbox&) = delete;
  loop_inbox& operator=(const loop_inbox&) = delete;

  // Any thread. Work runs on the loop thread in the order it was posted.
  void post(std::function<void()> work);
  // Loop thread: drops waiting and later work and closes the handle.
  void close();

 private:
  static void on_async(uv_async_t* async);

  std::mutex mutex_;
  std::vector<std::function<void()>> queue_;
  bool open_ = true;
  uv_async_t async_;
};

}  // namespace troupe::http
