// The figures of `troupe bench` from known request outcomes: vLLM's definitions of TPOT,
// ITL and goodput, numpy's percentiles, the text table and the JSON.
#define BOOST_TEST_MODULE serve_report
#include <boost/test/unit_test.hpp>

#include <cmath>

#include <nlohmann/json.hpp>

#include "bench/report_writer.hpp"
#include "bench/serve_report.hpp"

using namespace troupe::bench;
namespace tt = boost::test_tools;

namespace {

request_outcome ok(double ttft, std::vector<double> itl, double e2e, int out, int in = 10) {
  request_outcome r;
  r.success = true;
  r.ttft_s = ttft;
  r.itl_s = std::move(itl);
  r.e2e_s = e2e;
  r.output_tokens = out;
  r.prompt_tokens = in;
  return r;
}

request_outcome failed(std::string why) {
  request_outcome r;
  r.error = std::move(why);
  return r;
}

}  // namespace

BOOST_AUTO_TEST_CASE(percentiles_interpolate_as_numpy_does) {
  BOOST_TEST(percentile({4, 1, 3, 2}, 50) == 2.5, tt::tolerance(1e-12));
  BOOST_TEST(percentile({4, 1, 3, 2}, 99) == 3.97, tt::tolerance(1e-12));
  BOOST_TEST(percentile({7}, 99) == 7.0);
  BOOST_TEST(percentile({}, 50) == 0.0);
  const auto s = stats_of_seconds({0.001, 0.002, 0.003, 0.004});
  BOOST_TEST(s.mean_ms == 2.5, tt::tolerance(1e-9));
  BOOST_TEST(s.median_ms == 2.5, tt::tolerance(1e-9));
  BOOST_TEST(s.std_ms == std::sqrt(1.25), tt::tolerance(1e-9));
  BOOST_TEST(s.p99_ms == 3.97, tt::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(throughput_and_latency_count_successes_only) {
  const std::vector<request_outcome> outcomes{
      ok(0.1, {0.05, 0.05, 0.1}, 0.3, 5),  // TPOT (0.3 - 0.1) / 4 = 0.05
      ok(0.2, {}, 0.2, 1),                 // one token: no TPOT, no ITL
      failed("HTTP 500"),
  };
  const auto r = summarize(outcomes, 2.0, {});
  BOOST_TEST(r.completed == 2);
  BOOST_TEST(r.failed == 1);
  BOOST_TEST(r.total_input_tokens == 20);
  BOOST_TEST(r.total_output_tokens == 6);
  BOOST_TEST(r.request_throughput == 1.0);
  BOOST_TEST(r.output_throughput == 3.0);
  BOOST_TEST(r.total_token_throughput == 13.0);
  BOOST_TEST(!r.request_goodput);
  BOOST_TEST(r.ttft.mean_ms == 150.0, tt::tolerance(1e-9));
  BOOST_TEST(r.tpot.mean_ms == 50.0, tt::tolerance(1e-9));
  BOOST_TEST(r.tpot.p99_ms == 50.0, tt::tolerance(1e-9));
  BOOST_TEST(r.itl.median_ms == 50.0, tt::tolerance(1e-9));
  BOOST_TEST(r.e2el.median_ms == 250.0, tt::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(goodput_counts_requests_that_meet_every_target) {
  const std::vector<request_outcome> outcomes{
      ok(0.1, {0.05}, 0.15, 2),  // TPOT 50 ms
      ok(0.3, {0.01}, 0.31, 2),  // TTFT too slow
      ok(0.1, {0.2}, 0.3, 2),    // TPOT too slow
      ok(0.2, {}, 0.2, 1),       // no TPOT to miss
  };
  auto slo = parse_slo_targets("ttft:250 tpot:100");
  BOOST_REQUIRE(slo);
  BOOST_TEST(summarize(outcomes, 1.0, *slo).request_goodput.value() == 2.0);
  slo = parse_slo_targets("e2el:300,ttft:1000");
  BOOST_REQUIRE(slo);
  BOOST_TEST(!slo->tpot_ms);
  BOOST_TEST(summarize(outcomes, 2.0, *slo).request_goodput.value() == 1.5);
  BOOST_TEST(!parse_slo_targets("ttft"));
  BOOST_TEST(!parse_slo_targets("ttft:-1"));
  BOOST_TEST(!parse_slo_targets("ttft:fast"));
  BOOST_TEST(!parse_slo_targets("latency:5"));
  BOOST_TEST(!parse_slo_targets(""));
}

BOOST_AUTO_TEST_CASE(the_table_and_the_json) {
  const std::vector<request_outcome> outcomes{ok(0.1, {0.05}, 0.15, 2),
                                              failed("the server closed the connection \xff")};
  run_info info{"http://127.0.0.1:8000", "/v1/completions", "demo", 2, 16, INFINITY, {}};
  info.slo.ttft_ms = 500;
  const auto r = summarize(outcomes, 1.0, info.slo);
  const std::string text = format_report(r, info);
  BOOST_TEST(text.find("============ Serving Benchmark Result ============\n") == 0u);
  BOOST_TEST(text.find("Successful requests:                     1\n") != std::string::npos, text);
  BOOST_TEST(text.find("Maximum request concurrency:             16\n") != std::string::npos, text);
  BOOST_TEST(text.find("Request goodput (req/s):                 1.00\n") != std::string::npos, text);
  BOOST_TEST(text.find("---------------Time to First Token----------------\n") != std::string::npos, text);
  BOOST_TEST(text.find("Median TTFT (ms):                        100.00\n") != std::string::npos, text);
  BOOST_TEST(text.find("P99 E2EL (ms):                           150.00\n") != std::string::npos, text);

  const auto j = nlohmann::json::parse(report_json(r, info, outcomes));
  BOOST_TEST(j["request_rate"] == "inf");
  BOOST_TEST(j["max_concurrency"] == 16);
  BOOST_TEST(j["completed"] == 1);
  BOOST_TEST(j["failed"] == 1);
  BOOST_TEST(j["request_goodput"] == 1.0);
  BOOST_TEST(j["goodput_targets_ms"]["ttft"] == 500.0);
  BOOST_TEST(j["median_tpot_ms"].get<double>() == 50.0, tt::tolerance(1e-9));
  BOOST_TEST(j["itls"].size() == 2u);
  BOOST_TEST(j["errors"][1] == "the server closed the connection \xEF\xBF\xBD");  // bad UTF-8 replaced
}
