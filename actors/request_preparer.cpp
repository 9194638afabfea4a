#include "actors/request_preparer.hpp"

#include <cstdio>
#include <exception>

namespace troupe {

request_preparer_actor::behavior_type request_preparer(
    request_preparer_actor::stateful_pointer<request_preparer_state> self, preparation_context context) {
  self->state.context = std::move(context);
  return {
      [=](prepare_atom, const http_call_ptr& http) {
        try {
          return std::make_shared<prepared_request>(prepare_request(self->state.context, http->request));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "troupe: gateway: preparing a request to %s failed: %s\n", http->request.path.c_str(),
                       e.what());
          return std::make_shared<prepared_request>(
              prepared_request{internal_error(std::string("internal error: ") + e.what())});
        }
      },
  };
}

}  // namespace troupe
