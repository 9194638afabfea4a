#pragma once
// A preparer thread of the gateway (actors.hpp): it runs detached, as the work it does
// takes time in proportion to the request, and contains what a request's preparation
// throws as that request's 500.
#include "actors/actors.hpp"
#include "gateway/request_preparation.hpp"

namespace troupe {

struct request_preparer_state {
  static inline const char* name = "request_preparer";
  preparation_context context;
};

request_preparer_actor::behavior_type request_preparer(
    request_preparer_actor::stateful_pointer<request_preparer_state> self, preparation_context context);

}  // namespace troupe
