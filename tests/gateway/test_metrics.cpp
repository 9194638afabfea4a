// The Prometheus registry: exact exposition text, promtool's verdict, concurrent updates.
#define BOOST_TEST_MODULE metrics
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <thread>

#include "gateway/metrics.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

using namespace troupe;

namespace {

test::command_result promtool_check(const std::string& text) {
  test::temp_dir dir("metrics");
  auto file = dir.path() / "metrics.prom";
  std::ofstream(file) << text;
  return test::run_command("promtool check metrics < " + file.string() + " 2>&1");
}

}  // namespace

BOOST_AUTO_TEST_CASE(renders_the_text_exposition_format) {
  metrics::registry r;
  auto& requests = r.add_counter("troupe_http_requests_total", "HTTP requests answered, by status.");
  auto& running = r.add_gauge("troupe_running_requests", "Requests being generated.\nNow.");
  auto& latency = r.add_histogram("troupe_request_duration_seconds", "Time to the last token.", {0.5, 1, 2.5});
  r.add_gauge("troupe_never_used", "A family without series renders nothing.");
  requests.add({{"status", "200"}}).inc();
  requests.add({{"status", "200"}}).inc(2);
  requests.add({{"status", "4\"0\\0\n"}}).inc();
  running.add().set(3);
  running.add().dec();
  auto& h = latency.add({{"model", "qwen"}, {"api", "chat"}});
  for (double v : {0.1, 0.5, 0.7, 3.0}) h.observe(v);
  BOOST_TEST(r.render() ==
             "# HELP troupe_http_requests_total HTTP requests answered, by status.\n"
             "# TYPE troupe_http_requests_total counter\n"
             "troupe_http_requests_total{status=\"200\"} 3\n"
             "troupe_http_requests_total{status=\"4\\\"0\\\\0\\n\"} 1\n"
             "# HELP troupe_running_requests Requests being generated.\\nNow.\n"
             "# TYPE troupe_running_requests gauge\n"
             "troupe_running_requests 2\n"
             "# HELP troupe_request_duration_seconds Time to the last token.\n"
             "# TYPE troupe_request_duration_seconds histogram\n"
             "troupe_request_duration_seconds_bucket{api=\"chat\",model=\"qwen\",le=\"0.5\"} 2\n"
             "troupe_request_duration_seconds_bucket{api=\"chat\",model=\"qwen\",le=\"1\"} 3\n"
             "troupe_request_duration_seconds_bucket{api=\"chat\",model=\"qwen\",le=\"2.5\"} 3\n"
             "troupe_request_duration_seconds_bucket{api=\"chat\",model=\"qwen\",le=\"+Inf\"} 4\n"
             "troupe_request_duration_seconds_sum{api=\"chat\",model=\"qwen\"} 4.3\n"
             "troupe_request_duration_seconds_count{api=\"chat\",model=\"qwen\"} 4\n");
}

BOOST_AUTO_TEST_CASE(the_same_labels_in_any_order_are_one_series) {
  metrics::registry r;
  auto& f = r.add_counter("troupe_tokens_total", "Tokens generated.");
  auto& a = f.add({{"b", "2"}, {"a", "1"}});
  auto& b = f.add({{"a", "1"}, {"b", "2"}});
  BOOST_TEST(&a == &b);
  BOOST_TEST(&f.add({{"a", "1"}}) != &a);
}

// What a removed replica measured leaves the page; a family without series renders nothing.
BOOST_AUTO_TEST_CASE(removed_series_leave_the_page) {
  metrics::registry r;
  auto& f = r.add_gauge("troupe_replica_weight", "Weight.");
  f.add({{"replica", "blue"}}).set(1);
  f.add({{"replica", "green"}, {"zone", "a"}}).set(2);
  f.add({{"replica", "greenish"}}).set(3);
  f.remove({{"zone", "a"}, {"replica", "green"}});  // labels in any order
  std::string page = r.render();
  BOOST_TEST(page.find("replica=\"green\"") == std::string::npos, page);
  BOOST_TEST(page.find("replica=\"greenish\"") != std::string::npos, page);
  f.remove_if([](const metrics::labels&) { return true; });
  BOOST_TEST(r.render().empty(), r.render());
  f.add({{"replica", "green"}}).set(4);  // back again, from a new series
  BOOST_TEST(r.render().find("troupe_replica_weight{replica=\"green\"} 4") != std::string::npos, r.render());
}

BOOST_AUTO_TEST_CASE(promtool_accepts_the_output) {
  metrics::registry r;
  auto& requests = r.add_counter("troupe_http_requests_total", "HTTP requests answered.");
  for (const char* status : {"200", "400", "503"}) requests.add({{"status", status}, {"path", "/v1/\"x\""}}).inc();
  r.add_gauge("troupe_kv_blocks_free", "Free KV cache blocks.").add().set(1024);
  r.add_gauge("troupe_queue_depth", "Requests waiting.").add().set(-0.5);
  auto& ttft =
      r.add_histogram("troupe_time_to_first_token_seconds", "Time to the first token.", {0.005, 0.01, 0.1, 1, 10, 1e6});
  ttft.add().observe(0.02);
  ttft.add({{"model", "m"}}).observe(1e9);
  r.add_counter("troupe_generated_bytes_total", "Bytes streamed.").add().inc(1.5e12);
  auto result = promtool_check(r.render());
  BOOST_TEST(result.exit_code == 0, result.output);
  BOOST_TEST(result.output.empty(), result.output);  // no lint complaints either
}

BOOST_AUTO_TEST_CASE(promtool_flags_what_lint_forbids) {
  // The check above only means something if promtool does complain about bad names.
  auto result = promtool_check("# HELP requests Requests.\n# TYPE requests counter\nrequests 1\n");
  BOOST_TEST(result.exit_code != 0, result.output);
}

BOOST_AUTO_TEST_CASE(updates_from_many_threads_all_count) {
  metrics::registry r;
  auto& c = r.add_counter("troupe_events_total", "Events.").add();
  auto& g = r.add_gauge("troupe_level", "Level.").add();
  auto& h = r.add_histogram("troupe_size_bytes", "Sizes.", {10, 100}).add();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.inc();
        g.inc();
        h.observe(i % 200);
      }
    });
  for (auto& t : threads) t.join();
  BOOST_TEST(c.value() == 40000);
  BOOST_TEST(g.value() == 40000);
  auto s = h.read();
  BOOST_TEST(s.cumulative[0] == 4u * 50 * 11);  // 0..10 in each run of 200
  BOOST_TEST(s.cumulative[1] == 4u * 50 * 101);
  BOOST_TEST(s.cumulative[2] == 40000u);
  BOOST_TEST(s.sum == 4.0 * 50 * (199 * 200 / 2));
}
