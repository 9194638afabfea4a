// The JSON of /admin/replicas: which change a path and body ask for, what is refused and
// with which status, and the list read back as `troupe cluster add` and `remove` read it.
#define BOOST_TEST_MODULE admin_replicas_json
#include <boost/test/unit_test.hpp>

#include "gateway/admin/admin_replicas_json.hpp"

using namespace troupe;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(an_add_or_a_remove_from_the_path_and_body) {
  auto added = parse_replica_change("green/add", R"({"weight": 2, "ramp_s": 1.5})");
  BOOST_REQUIRE(added);
  BOOST_TEST(added->name == "green");
  BOOST_TEST(added->add);
  BOOST_TEST(*added->weight == 2.0);
  BOOST_TEST(added->ramp.count() == 1500);
  auto plain = parse_replica_change("green/add", "");
  BOOST_REQUIRE(plain);
  BOOST_TEST(!plain->weight, "no weight given: the file's");
  BOOST_TEST(plain->ramp.count() == 0);
  auto removed = parse_replica_change("blue/remove", "{}");
  BOOST_REQUIRE(removed);
  BOOST_TEST(removed->name == "blue");
  BOOST_TEST(!removed->add);
}

BOOST_AUTO_TEST_CASE(bad_paths_and_bodies_are_refused) {
  const struct {
    const char* path;
    const char* body;
    int status;
    const char* says;
  } cases[] = {
      {"green/explode", "", 404, "no endpoint /admin/replicas/green/explode (/admin/replicas/NAME/add or /remove)"},
      {"green", "", 404, "no endpoint"},
      {"/add", "", 404, "no endpoint"},
      {"green/add", "[1]", 400, "must be a JSON object"},
      {"green/add", "{", 400, "not valid JSON"},
      {"green/add", R"({"weight": -1})", 400, "weight must be a number 0 or more"},
      {"green/add", R"({"weight": "2"})", 400, "weight must be a number 0 or more"},
      {"green/add", R"({"ramp_s": 90000})", 400, "ramp_s must be a number of seconds"},
      {"green/add", R"({"colour": 1})", 400, "unknown field colour"},
      {"green/remove", R"({"weight": 0})", 400, "a remove takes none"},
  };
  for (const auto& c : cases) {
    auto r = parse_replica_change(c.path, c.body);
    BOOST_REQUIRE_MESSAGE(!r, c.path << " " << c.body);
    BOOST_TEST(r.err().status == c.status, c.path << " " << c.body);
    BOOST_TEST(r.err().message.find(c.says) != std::string::npos, r.err().message);
  }
}

BOOST_AUTO_TEST_CASE(the_list_reads_back_and_the_cli_body_parses) {
  const std::vector<replica_listing> list{{"blue", replica_state::serving, 1, 3, ""},
                                          {"red", replica_state::off, 0, 0, "node second: no answer"}};
  auto back = parse_replicas_json(replicas_json(list));
  BOOST_REQUIRE(back);
  BOOST_REQUIRE(back->size() == 2u);
  BOOST_TEST((back->at(0).state == replica_state::serving));
  BOOST_TEST(back->at(0).in_flight == 3);
  BOOST_TEST(back->at(1).last_error == "node second: no answer");
  BOOST_TEST(!parse_replicas_json(R"({"replicas":[{"name":"x","state":"gone"}]})"));
  BOOST_TEST(replica_add_body(std::nullopt, std::nullopt).empty());
  auto body = parse_replica_change("red/add", replica_add_body(0.5, 30));
  BOOST_REQUIRE(body);
  BOOST_TEST(*body->weight == 0.5);
  BOOST_TEST(body->ramp.count() == 30000);
}
