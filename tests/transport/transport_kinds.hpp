#pragma once
// The kinds of transport the transport tests run over (a Boost.Test template case per
// kind): each makes endpoints that reach each other.
#include <memory>
#include <tuple>

#include <boost/test/unit_test.hpp>

#include "tests/support/error_text.hpp"
#include "tests/transport/keep_unreceived.hpp"
#include "transport/in_process_transport.hpp"
#include "transport/ucx_transport.hpp"

namespace troupe::test {

struct in_process_kind {
  std::shared_ptr<in_process_hub> hub = std::make_shared<in_process_hub>();
  std::unique_ptr<transport> make() { return std::make_unique<in_process_transport>(hub); }
};

struct ucx_kind {
  std::unique_ptr<transport> make() {
    auto t = ucx_transport::create(keep_unreceived);
    BOOST_REQUIRE_MESSAGE(t, error_text(t));
    return std::move(t).value();
  }
};

using transport_kinds = std::tuple<in_process_kind, ucx_kind>;

}  // namespace troupe::test
