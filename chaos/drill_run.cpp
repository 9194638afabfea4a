#include "chaos/drill_run.hpp"

#include <signal.h>

#include <algorithm>
#include <future>
#include <random>
#include <thread>

#include "base/hang_drill_signal.hpp"
#include "bench/serve_load.hpp"
#include "bench/serve_report.hpp"
#include "chaos/cluster_under_test.hpp"
#include "chaos/garbage_connections.hpp"
#include "chaos/partition_network.hpp"
#include "chaos/slow_client.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe::chaos {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// `count` seeded streams of random token ids inside the model's vocabulary, one seed each.
std::vector<bench::bench_prompt> prompts_of(const chaos_spec& spec, int count, int vocab, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> token(1, vocab - 1);
  std::vector<bench::bench_prompt> prompts(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    auto& p = prompts[size_t(i)];
    for (int j = 0; j < spec.prompt_tokens; ++j) p.ids.push_back(token(gen));
    p.input_len = spec.prompt_tokens;
    p.output_len = spec.max_tokens;
    p.seed = i;
  }
  return prompts;
}

// Never ended, or ended without its finish: what a client could not tell from a clear
// error.
bool is_lost(const bench::request_outcome& r) {
  return r.error.find("sent nothing for") != std::string::npos ||
         r.error.find("without \"data: [DONE]\"") != std::string::npos;
}

// The longest a stream waited between two tokens: a fault's stall as a client sees it.
double longest_token_gap(const std::vector<bench::request_outcome>& outcomes) {
  double longest = 0;
  for (const auto& r : outcomes)
    for (double gap : r.itl_s) longest = std::max(longest, gap);
  return longest;
}

double ttft_p99(const std::vector<bench::request_outcome>& outcomes) {
  std::vector<double> ttft;
  for (const auto& r : outcomes)
    if (r.success) ttft.push_back(r.ttft_s);
  return bench::percentile(ttft, 99);
}

// A fault to a node's link (in its network namespace), which ends after its duration.
bool is_network_fault(fault f) {
  return f == fault::partition || f == fault::congest || f == fault::lossy || f == fault::delay;
}

// `drill.connections` garbage connections to each port the process listens on.
status send_garbage_to(const drill_spec& drill, int pid) {
  const auto ports = listening_ports(pid);
  if (ports.empty()) return error{"its process (pid " + std::to_string(pid) + ") listens on no TCP port"};
  for (const listening_port& p : ports)
    if (const int made = send_garbage(p, drill.connections, unsigned(pid)); made < drill.connections)
      return error{std::to_string(drill.connections - made) + " of " + std::to_string(drill.connections) +
                   " garbage connections to " + p.address + ":" + std::to_string(p.port) + " were refused"};
  return ok();
}

// The drill's fault to the node, whose process is `pid`.
status hit(const drill_spec& drill, int pid, partition_network* network) {
  switch (drill.action) {
    case fault::kill:
      ::kill(pid, SIGKILL);
      return ok();
    case fault::stop:
      ::kill(pid, SIGSTOP);
      return ok();
    case fault::hang:
      return send_hang_drill(pid, int(drill.hang.count()));
    case fault::partition:
      return network->cut(drill.node);
    case fault::congest:
      return network->throttle(drill.node, drill.rate_kbit, int(drill.queue.count()));
    case fault::lossy:
      return network->drop_at_random(drill.node, drill.loss_percent);
    case fault::delay:
      return network->delay(drill.node, drill.delay, drill.jitter, uint32_t(drill.line));
    case fault::garbage:
      return send_garbage_to(drill, pid);
    case fault::slow_client:
      break;
  }
  TROUPE_CHECK(false, "a fault that hits no node");
  return ok();
}

// Ends the network fault `hit` put on the drill's node.
status lift(const drill_spec& drill, partition_network& network) {
  switch (drill.action) {
    case fault::partition:
      return network.heal(drill.node);
    case fault::congest:
      return network.unthrottle(drill.node);
    case fault::lossy:
      return network.stop_dropping(drill.node);
    case fault::delay:
      return network.undelay(drill.node);
    default:
      break;
  }
  TROUPE_CHECK(false, "a fault that is not the network's");
  return ok();
}

// Hits `drill.node` until the load ends or `count` faults are done, each time waiting until
// it is back: /health at 200 again and, for a node's process, a new one running. A hang of
// the gateway's node hits the head, whose stages are replaced in its process: back once
// /health, seen failing, answers 200 again. Recovery counts from the detection (/health
// seen failing), so a stop or a hang does not count the timeout that declares it failed
// twice. A partition (congestion, loss, delay) is healed (lifted) after its duration and is
// over once /health answers 200 after that (the node may or may not have been lost and
// started again meanwhile); its recovery counts from the heal.
void do_faults(cluster_under_test& cluster, const drill_spec& drill, bool at_head, partition_network* network,
               const std::future<bench::load_result>& load, const std::chrono::seconds patience, drill_result& out) {
  auto load_running = [&] { return load.wait_for(std::chrono::seconds(0)) != std::future_status::ready; };
  auto pid_now = [&] { return at_head ? cluster.head_pid() : cluster.node_pid(drill.node); };
  std::this_thread::sleep_for(drill.interval);  // the streams under way first
  for (int k = 0; k < drill.count && load_running(); ++k) {
    const int old = pid_now();
    if (old == 0) {
      out.failures.push_back("node " + drill.node + " was not running before fault " + std::to_string(k + 1));
      return;
    }
    const auto hit_at = clock_type::now();
    if (auto done = hit(drill, old, network); !done) {
      out.failures.push_back("node " + drill.node + ": " + done.err().message);
      return;
    }
    ++out.faults;
    const bool timed = is_network_fault(drill.action);
    bool seen_down = false, healed = false;
    auto ended_at = hit_at;     // of the fault: a timed one ends when it heals
    auto detected_at = hit_at;  // when /health was first seen failing
    for (;;) {
      if (timed && !healed && clock_type::now() - hit_at >= drill.duration) {
        if (auto done = lift(drill, *network); !done) {
          out.failures.push_back("node " + drill.node + ": " + done.err().message);
          return;
        }
        healed = true;
        ended_at = clock_type::now();
      }
      const bool healthy = cluster.healthy();
      if (!healthy && !seen_down) {
        seen_down = true;
        detected_at = clock_type::now();
        out.detect_s.push_back(seconds_since(hit_at));
      }
      const int now = pid_now();
      if (drill.action == fault::garbage && now != old) {
        out.failures.push_back("node " + drill.node + "'s process ended under garbage at its ports");
        return;
      }
      const bool back = drill.action == fault::garbage || (timed ? healed : at_head ? seen_down : now != old);
      if (healthy && now != 0 && back) break;
      if (clock_type::now() - hit_at > patience) {
        out.failures.push_back("node " + drill.node + " was not back within " + std::to_string(patience.count()) +
                               " s");
        if (timed && !healed) (void)lift(drill, *network);  // the drills after it need the link
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!seen_down && !timed) {  // back before a poll saw it down
      detected_at = clock_type::now();
      out.detect_s.push_back(seconds_since(hit_at));
    }
    out.recover_s.push_back(seconds_since(timed ? ended_at : detected_at));
    if (drill.action == fault::stop) ::kill(old, SIGCONT);  // should the head have left it stopped
    std::this_thread::sleep_for(drill.interval);
  }
}

// The slow-client drill's clients, once the load is over: each dropped by the gateway by
// now or within `patience`, or stopped and counted as kept.
void collect_slow_clients(std::vector<std::future<slow_client_result>>& clients, std::atomic<bool>& stop,
                          std::chrono::milliseconds patience, drill_result& out) {
  const auto deadline = clock_type::now() + patience;
  std::vector<slow_client_result> results;
  for (auto& c : clients) {
    c.wait_until(deadline);
    stop = true;
    results.push_back(c.get());
  }
  size_t bytes = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const slow_client_result& r = results[i];
    if (!r.error.empty())
      out.failures.push_back("slow client " + std::to_string(i) + ": " + r.error);
    else if (r.dropped)
      out.detect_s.push_back(r.seconds);
    else
      out.failures.push_back("slow client " + std::to_string(i) + " was still served " +
                             std::to_string(int(r.seconds)) + " s after its request");
    bytes += r.bytes_read;
  }
  out.notes.push_back(std::to_string(out.detect_s.size()) + " of " + std::to_string(results.size()) +
                      " slow clients dropped by the gateway (their requests cancelled), after " +
                      std::to_string(bytes) + " bytes read in all at a byte a second");
}

// Whether `node` runs a pipeline stage of some replica (what a hang blocks).
bool runs_a_stage(const cluster_spec& spec, const std::string& node) {
  for (const replica_spec& r : spec.replicas)
    for (const placement& p : r.stages)
      if (p.node == node) return true;
  return false;
}

// What a drill needs of the cluster's file: a node it can hit.
status check_drill(const chaos_spec& spec, const cluster_spec& cluster, const drill_spec& d) {
  const std::string where = spec.file.string() + ":" + std::to_string(d.line) + ": [drill." + d.name + "] ";
  const node_spec* n = cluster.node(d.node);
  if (d.action == fault::slow_client) return ok();
  if (is_network_fault(d.action)) {
    if (n == nullptr || n->netns.empty())
      return error{where +
                   (d.action == fault::partition ? "cuts node `"
                    : d.action == fault::congest ? "throttles node `"
                    : d.action == fault::delay   ? "delays packets of node `"
                                                 : "drops packets of node `") +
                   d.node + "`'s link, which must be a node of " + spec.cluster.string() +
                   " in a network namespace of its own (`netns`)"};
    return ok();
  }
  if (d.action == fault::garbage) {
    if (n == nullptr || (n->name != cluster.gateway.node && n->port != 0))
      return error{where + "sends garbage to node `" + d.node + "`, which must be a node of " + spec.cluster.string() +
                   " that `troupe cluster up` runs (the gateway's, or one of port 0)"};
    return ok();
  }
  if (d.action == fault::hang) {
    if (n == nullptr || !runs_a_stage(cluster, d.node) || (n->name != cluster.gateway.node && n->port != 0))
      return error{where + "hangs node `" + d.node + "`, which must be a node of " + spec.cluster.string() +
                   " that runs a pipeline stage and that `troupe cluster up` runs (the gateway's, or one of port 0)"};
    if (d.hang <= cluster.engine.progress_timeout)
      return error{where + "hang_ms (" + std::to_string(d.hang.count()) +
                   ") must be longer than the cluster's "
                   "progress_timeout_ms (" +
                   std::to_string(cluster.engine.progress_timeout.count()) + "), or nothing is declared stuck"};
    return ok();
  }
  if (n == nullptr || n->name == cluster.gateway.node || n->port != 0)
    return error{where + "hits node `" + d.node + "`, which must be a node of " + spec.cluster.string() +
                 " that `troupe cluster up` starts itself (port 0, not the gateway's)"};
  return ok();
}

}  // namespace

result<run_result> run_chaos(const chaos_spec& spec, const std::filesystem::path& log) {
  auto checked = read_cluster_with_model(spec.cluster);
  if (!checked) return checked.err();
  const cluster_spec& cluster_file = checked->spec;
  for (const drill_spec& d : spec.drills)
    if (auto usable = check_drill(spec, cluster_file, d); !usable) return usable.err();
  // Before the cluster and any thread start: the run moves into a network of its own.
  std::unique_ptr<partition_network> network;
  const auto& nodes = cluster_file.nodes;
  if (std::any_of(nodes.begin(), nodes.end(), [](const node_spec& n) { return !n.netns.empty(); })) {
    auto made = partition_network::create(cluster_file);
    if (!made) return made.err();
    network = std::move(*made);
  }
  auto cluster = cluster_under_test::start(spec.cluster, log, cluster_file.cluster.startup_timeout);
  if (!cluster) return cluster.err();

  bench::request_spec request;
  request.model =
      served_model_names(cluster_file.model.served_model_name.empty() ? cluster_file.model.path.filename().string()
                                                                      : cluster_file.model.served_model_name)
          .front();
  request.api_key = cluster_file.gateway.api_key;
  request.temperature = spec.temperature;
  const auto prompts = prompts_of(spec, spec.streams, checked->model.vocab_size, 12345);
  bench::load_options load;
  load.max_concurrency = spec.streams;
  load.read_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(cluster_file.cluster.step_timeout) * 2;
  load.show_progress = false;
  auto run_load = [&] { return bench::run_load((*cluster)->server(), request, prompts, load); };

  const bench::load_result clean = run_load();
  run_result result;
  for (const auto& r : clean.outcomes)
    if (!r.success) {
      result.violations.push_back("the fault-free pass failed a request: " + r.error);
      return result;
    }
  for (const drill_spec& d : spec.drills) {
    drill_result out;
    out.drill = d;
    std::vector<std::future<slow_client_result>> slow;
    std::atomic<bool> stop_slow{false};
    if (d.action == fault::slow_client) {
      out.faults = d.count;
      for (const auto& p : prompts_of(spec, d.count, checked->model.vocab_size, 54321))
        slow.push_back(
            std::async(std::launch::async, run_slow_client, (*cluster)->server(), request, p, std::cref(stop_slow)));
    }
    auto faulty = std::async(std::launch::async, run_load);
    if (d.action != fault::slow_client)
      do_faults(**cluster, d, d.node == cluster_file.gateway.node, network.get(), faulty,
                cluster_file.cluster.startup_timeout, out);
    const bench::load_result got = faulty.get();
    if (!slow.empty())
      collect_slow_clients(slow, stop_slow, cluster_file.gateway.send_timeout + std::chrono::seconds(10), out);
    out.accepted = int(got.outcomes.size());
    for (size_t i = 0; i < got.outcomes.size(); ++i) {
      const auto& r = got.outcomes[i];
      if (r.success) {
        ++out.completed;
        if (r.text != clean.outcomes[i].text) ++out.different;
      } else {
        ++(is_lost(r) ? out.lost : out.errored);
        if (out.failures.size() < 5) out.failures.push_back("stream " + std::to_string(i) + ": " + r.error);
      }
    }
    out.ttft_p99_clean_s = ttft_p99(clean.outcomes);
    out.ttft_p99_fault_s = ttft_p99(got.outcomes);
    out.longest_gap_clean_s = longest_token_gap(clean.outcomes);
    out.longest_gap_fault_s = longest_token_gap(got.outcomes);
    const std::string name = "drill " + d.name + ": ";
    if (out.faults < d.count)
      result.violations.push_back(name + std::to_string(out.faults) + " of " + std::to_string(d.count) +
                                  " faults while the load ran (make the streams longer)");
    if (out.lost > 0) result.violations.push_back(name + std::to_string(out.lost) + " streams lost");
    if (out.errored > 0)
      result.violations.push_back(name + std::to_string(out.errored) + " streams ended with an error");
    if (out.different > 0)
      result.violations.push_back(name + std::to_string(out.different) + " streams differ from the fault-free run");
    const double limit = std::chrono::duration<double>(spec.recovery_limit).count();
    if (!out.recover_s.empty() && bench::percentile(out.recover_s, 99) > limit)
      result.violations.push_back(name + "recovery p99 above " + std::to_string(spec.recovery_limit.count()) + " ms");
    for (const std::string& f : out.failures) result.violations.push_back(name + f);
    result.drills.push_back(std::move(out));
  }
  return result;
}

}  // namespace troupe::chaos
