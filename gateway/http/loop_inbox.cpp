#include "gateway/http/loop_inbox.hpp"

#include <utility>

#include "base/check.hpp"

namespace troupe::http {

loop_inbox::loop_inbox(uv_loop_t* loop) {
  TROUPE_CHECK(uv_async_init(loop, &async_, on_async) == 0, "uv_async_init");
  async_.data = this;
}

void loop_inbox::post(std::function<void()> work) {
  std::lock_guard lock(mutex_);
  if (!open_) return;
  queue_.push_back(std::move(work));
  uv_async_send(&async_);
}

void loop_inbox::close() {
  std::vector<std::function<void()>> dropped;
  {
    std::lock_guard lock(mutex_);
    if (!open_) return;
    open_ = false;
    dropped.swap(queue_);
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr);
}

void loop_inbox::on_async(uv_async_t* async) {
  auto& self = *static_cast<loop_inbox*>(async->data);
  std::vector<std::function<void()>> work;
  {
    std::lock_guard lock(self.mutex_);
    work.swap(self.queue_);
  }
  for (auto& w : work) w();
}

}  // namespace troupe::http
