// chaos/drills.conf: what a run reads from it, and the file:line error of each mistake.
#define BOOST_TEST_MODULE drills_conf
#include <boost/test/unit_test.hpp>

#include <fstream>

#include "chaos/drills_conf.hpp"
#include "tests/support/temp_dir.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

const test::temp_dir dir("drills_conf");

result<chaos::chaos_spec> read(const std::string& text) {
  const auto path = dir.path() / "drills.conf";
  std::ofstream(path) << text;
  return chaos::read_chaos_spec(path);
}

std::string error_of(const std::string& text) {
  auto spec = read(text);
  BOOST_REQUIRE_MESSAGE(!spec, "parsed: " + text);
  return spec.err().message;
}

const std::string chaos_section = "[chaos]\ncluster = cluster.conf\n";
const std::string drill = "[drill.one]\nnode = second\n";

}  // namespace

BOOST_AUTO_TEST_CASE(a_file_reads_as_written_with_defaults_for_the_rest) {
  auto spec = read(
      "[chaos]\ncluster = ../c/cluster.conf\nstreams = 8\nmax_tokens = 100\ntemperature = 0\n"
      "recovery_limit_ms = 2500\n\n[drill.first]\naction = kill\nnode = second\ncount = 3\n"
      "interval_ms = 50\n\n[drill.second]\naction = stop\nnode = third\n\n[drill.third]\naction = hang\nnode = head\n"
      "hang_ms = 4000\n\n[drill.fourth]\naction = slow_client\ncount = 2\n\n[drill.fifth]\naction = partition\n"
      "node = second\nduration_ms = 2500\n\n[drill.sixth]\naction = congest\nnode = second\nrate_kbit = 256\n"
      "queue_ms = 40\nduration_ms = 2000\n\n[drill.seventh]\naction = lossy\nnode = second\n"
      "loss_percent = 20\nduration_ms = 1500\n\n[drill.eighth]\naction = delay\nnode = second\n"
      "delay_ms = 80\njitter_ms = 30\nduration_ms = 1000\n\n[drill.ninth]\naction = garbage\nnode = second\n"
      "connections = 300\n");
  BOOST_REQUIRE_MESSAGE(spec, (spec ? std::string() : spec.err().message));
  BOOST_TEST(spec->cluster == (dir.path() / "../c/cluster.conf").lexically_normal());
  BOOST_TEST(spec->streams == 8);
  BOOST_TEST(spec->prompt_tokens == 32);
  BOOST_TEST(spec->max_tokens == 100);
  BOOST_TEST(spec->temperature == 0.0);
  BOOST_TEST((spec->recovery_limit == 2500ms));
  BOOST_REQUIRE(spec->drills.size() == 9u);
  BOOST_TEST((spec->drills[8].action == chaos::fault::garbage));
  BOOST_TEST(spec->drills[8].connections == 300);
  BOOST_TEST(spec->drills[0].connections == 1000);
  BOOST_TEST(spec->drills[0].name == "first");
  BOOST_TEST(spec->drills[0].node == "second");
  BOOST_TEST(spec->drills[0].count == 3);
  BOOST_TEST((spec->drills[0].interval == 50ms));
  BOOST_TEST(spec->drills[0].line == 8);
  BOOST_TEST((spec->drills[0].action == chaos::fault::kill));
  BOOST_TEST((spec->drills[1].action == chaos::fault::stop));
  BOOST_TEST(spec->drills[1].node == "third");
  BOOST_TEST(spec->drills[1].count == 1);
  BOOST_TEST((spec->drills[1].hang == 30000ms));
  BOOST_TEST((spec->drills[2].action == chaos::fault::hang));
  BOOST_TEST((spec->drills[2].hang == 4000ms));
  BOOST_TEST((spec->drills[3].action == chaos::fault::slow_client));
  BOOST_TEST(spec->drills[3].node == "");
  BOOST_TEST(spec->drills[3].count == 2);
  BOOST_TEST((spec->drills[4].action == chaos::fault::partition));
  BOOST_TEST((spec->drills[4].duration == 2500ms));
  BOOST_TEST((spec->drills[0].duration == 3000ms));
  BOOST_TEST((spec->drills[5].action == chaos::fault::congest));
  BOOST_TEST(spec->drills[5].rate_kbit == 256);
  BOOST_TEST((spec->drills[5].queue == 40ms));
  BOOST_TEST((spec->drills[5].duration == 2000ms));
  BOOST_TEST(spec->drills[4].rate_kbit == 512);
  BOOST_TEST((spec->drills[4].queue == 100ms));
  BOOST_TEST((spec->drills[6].action == chaos::fault::lossy));
  BOOST_TEST(spec->drills[6].loss_percent == 20);
  BOOST_TEST((spec->drills[6].duration == 1500ms));
  BOOST_TEST(spec->drills[5].loss_percent == 10);
  BOOST_TEST((spec->drills[7].action == chaos::fault::delay));
  BOOST_TEST((spec->drills[7].delay == 80ms));
  BOOST_TEST((spec->drills[7].jitter == 30ms));
  BOOST_TEST((spec->drills[7].duration == 1000ms));
  BOOST_TEST((spec->drills[6].delay == 100ms));
  BOOST_TEST((spec->drills[6].jitter == 0ms));
}

BOOST_AUTO_TEST_CASE(each_mistake_names_its_line) {
  const auto has = [](const std::string& error, const std::string& part) {
    BOOST_TEST(error.find(part) != std::string::npos, error << " lacks " << part);
  };
  has(error_of(chaos_section + "[drill.one]\naction = pause\nnode = second\n"),
      "drills.conf:4: `action` is kill (SIGKILL of the node's process), stop (SIGSTOP), hang (its stages block a "
      "step), partition (its network cut off), congest (its network throttled), lossy (its packets dropped at random), "
      "delay (its packets held for a random time), garbage (random bytes at its ports) or slow_client (a client "
      "reading a byte a second), not `pause`");
  has(error_of(chaos_section + drill + "connections = 5\n"), "drills.conf:5: `connections` is for action = garbage");
  has(error_of(chaos_section + drill + "duration_ms = 100\n"),
      "drills.conf:5: `duration_ms` is for action = partition, congest, lossy or delay");
  has(error_of(chaos_section + drill + "jitter_ms = 5\n"),
      "drills.conf:5: `delay_ms` and `jitter_ms` are for action = delay");
  has(error_of(chaos_section + "[drill.one]\naction = delay\nnode = second\ndelay_ms = 20\njitter_ms = 30\n"),
      "drills.conf:3: [drill.one]'s jitter_ms (30) is more than its delay_ms (20)");
  has(error_of(chaos_section + "[drill.one]\naction = delay\nnode = second\njitter_ms = -1\n"),
      "drills.conf:6: `jitter_ms` must be an integer 0 or more");
  has(error_of(chaos_section + drill + "loss_percent = 5\n"), "drills.conf:5: `loss_percent` is for action = lossy");
  has(error_of(chaos_section + "[drill.one]\naction = lossy\nnode = second\nloss_percent = 101\n"),
      "drills.conf:6: `loss_percent` must be an integer from 1");
  has(error_of(chaos_section + drill + "rate_kbit = 100\n"),
      "drills.conf:5: `rate_kbit` and `queue_ms` are for action = congest");
  has(error_of(chaos_section + "[drill.one]\naction = congest\nnode = second\nrate_kbit = 1\n"),
      "drills.conf:6: `rate_kbit` must be an integer from 8");
  has(error_of(chaos_section + "[drill.one]\naction = slow_client\nnode = second\n"),
      "drills.conf:3: [drill.one] is a slow_client drill, which hits no node");
  has(error_of(chaos_section + drill + "hang_ms = 100\n"), "drills.conf:5: `hang_ms` is for action = hang");
  has(error_of(chaos_section + "[drill.one]\ncount = 3\n"), "drills.conf:3: [drill.one] needs `node`");
  has(error_of(chaos_section + drill + "count = 0\n"), "drills.conf:5:");
  has(error_of("[chaos]\nstreams = 4\n" + drill), "drills.conf:1: [chaos] needs `cluster`");
  has(error_of("[chaos]\ncluster = c.conf\nstream = 4\n" + drill), "drills.conf:3: unknown key `stream` in [chaos]");
  has(error_of(drill), "no [chaos] section");
  has(error_of(chaos_section), "no [drill.NAME] section: nothing to do");
  has(error_of(chaos_section + "[drills.one]\nnode = x\n"), "drills.conf:3: unknown section [drills.one]");
  has(error_of(chaos_section + "[drill.One]\nnode = x\n"), "drills.conf:3: a drill name is lowercase");
}
