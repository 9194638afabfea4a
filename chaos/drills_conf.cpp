#include "chaos/drills_conf.hpp"

#include "cluster/conf_sections.hpp"

namespace troupe::chaos {
namespace {

status read_chaos(const ini_file& file, const ini_section& section, chaos_spec& spec) {
  return read_entries(file, section,
                      {
                          {"cluster",
                           [&](const ini_entry& e) -> status {
                             spec.cluster = (file.path.parent_path() / e.value).lexically_normal();
                             return ok();
                           }},
                          {"streams", integer(file, spec.streams, 1, 4096)},
                          {"prompt_tokens", integer(file, spec.prompt_tokens, 1)},
                          {"max_tokens", integer(file, spec.max_tokens, 1)},
                          {"temperature",
                           [&](const ini_entry& e) -> status {
                             auto t = non_negative_value(file, e);
                             if (!t) return t.err();
                             spec.temperature = *t;
                             return ok();
                           }},
                          {"recovery_limit_ms", positive_duration(file, spec.recovery_limit)},
                      });
}

status read_drill(const ini_file& file, const ini_section& section, const std::string& name, chaos_spec& spec) {
  if (auto s = check_name(file, section.line, "drill", name); !s) return s;
  drill_spec d;
  d.name = name;
  d.line = section.line;
  int hang_line = 0, duration_line = 0, congest_line = 0, loss_line = 0, delay_key_line = 0, connections_line = 0;
  auto s = read_entries(
      file, section,
      {
          {"action",
           [&](const ini_entry& e) -> status {
             for (fault f : {fault::kill, fault::stop, fault::hang, fault::partition, fault::congest, fault::lossy,
                             fault::delay, fault::garbage, fault::slow_client})
               if (e.value == fault_name(f)) {
                 d.action = f;
                 return ok();
               }
             return error{
                 file.where(e.line) +
                 "`action` is kill (SIGKILL of the node's process), stop (SIGSTOP), hang "
                 "(its stages block a step), partition (its network cut off), congest (its network throttled), "
                 "lossy (its packets dropped at random), delay (its packets held for a random time), garbage (random "
                 "bytes at its ports) or slow_client "
                 "(a client reading a byte a second), not `" +
                 e.value + "`"};
           }},
          {"node", text(d.node)},
          {"count", integer(file, d.count, 1, 10000)},
          {"interval_ms", positive_duration(file, d.interval)},
          {"hang_ms",
           [&](const ini_entry& e) {
             hang_line = e.line;
             return positive_duration(file, d.hang)(e);
           }},
          {"duration_ms",
           [&](const ini_entry& e) {
             duration_line = e.line;
             return positive_duration(file, d.duration)(e);
           }},
          {"rate_kbit",
           [&](const ini_entry& e) {
             congest_line = e.line;
             return integer(file, d.rate_kbit, 8, 100000000)(e);
           }},
          {"queue_ms",
           [&](const ini_entry& e) {
             congest_line = e.line;
             return positive_duration(file, d.queue)(e);
           }},
          {"connections",
           [&](const ini_entry& e) {
             connections_line = e.line;
             return integer(file, d.connections, 1, 1000000)(e);
           }},
          {"loss_percent",
           [&](const ini_entry& e) {
             loss_line = e.line;
             return integer(file, d.loss_percent, 1, 100)(e);
           }},
          {"delay_ms",
           [&](const ini_entry& e) {
             delay_key_line = e.line;
             return positive_duration(file, d.delay)(e);
           }},
          {"jitter_ms",
           [&](const ini_entry& e) -> status {
             delay_key_line = e.line;
             auto v = integer_value(file, e, 0, any_int);  // no jitter: every packet held as long
             if (!v) return v.err();
             d.jitter = std::chrono::milliseconds(*v);
             return ok();
           }},
      });
  if (!s) return s;
  if (d.action == fault::slow_client && !d.node.empty())
    return error{file.where(section.line) + "[" + section.name + "] is a slow_client drill, which hits no node"};
  if (d.action != fault::slow_client && d.node.empty())
    return error{file.where(section.line) + "[" + section.name + "] needs `node`: whose process it hits"};
  if (hang_line && d.action != fault::hang) return error{file.where(hang_line) + "`hang_ms` is for action = hang"};
  if (duration_line && d.action != fault::partition && d.action != fault::congest && d.action != fault::lossy &&
      d.action != fault::delay)
    return error{file.where(duration_line) + "`duration_ms` is for action = partition, congest, lossy or delay"};
  if (congest_line && d.action != fault::congest)
    return error{file.where(congest_line) + "`rate_kbit` and `queue_ms` are for action = congest"};
  if (loss_line && d.action != fault::lossy)
    return error{file.where(loss_line) + "`loss_percent` is for action = lossy"};
  if (connections_line && d.action != fault::garbage)
    return error{file.where(connections_line) + "`connections` is for action = garbage"};
  if (delay_key_line && d.action != fault::delay)
    return error{file.where(delay_key_line) + "`delay_ms` and `jitter_ms` are for action = delay"};
  if (d.jitter > d.delay)
    return error{file.where(section.line) + "[" + section.name + "]'s jitter_ms (" + std::to_string(d.jitter.count()) +
                 ") is more than its delay_ms (" + std::to_string(d.delay.count()) +
                 "): a packet is never held less than no time"};
  spec.drills.push_back(std::move(d));
  return ok();
}

}  // namespace

const char* fault_name(fault f) {
  switch (f) {
    case fault::kill:
      return "kill";
    case fault::stop:
      return "stop";
    case fault::hang:
      return "hang";
    case fault::partition:
      return "partition";
    case fault::congest:
      return "congest";
    case fault::lossy:
      return "lossy";
    case fault::delay:
      return "delay";
    case fault::garbage:
      return "garbage";
    case fault::slow_client:
      return "slow_client";
  }
  TROUPE_CHECK(false, "a fault without a name");
  return "";
}

result<chaos_spec> read_chaos_spec(const std::filesystem::path& path) {
  auto file = read_ini_file(path);
  if (!file) return file.err();
  chaos_spec spec;
  spec.file = path;
  int chaos_line = 0;
  for (const ini_section& section : file->sections) {
    if (section.name == "chaos") {
      chaos_line = section.line;
      if (auto s = read_chaos(*file, section, spec); !s) return s.err();
    } else if (section.name.rfind("drill.", 0) == 0) {
      if (auto s = read_drill(*file, section, section.name.substr(6), spec); !s) return s.err();
    } else {
      return error{file->where(section.line) + "unknown section [" + section.name + "] ([chaos], [drill.NAME])"};
    }
  }
  if (chaos_line == 0) return error{path.string() + ": no [chaos] section"};
  if (spec.cluster.empty()) return error{file->where(chaos_line) + "[chaos] needs `cluster`: the cluster.conf to run"};
  if (spec.drills.empty()) return error{path.string() + ": no [drill.NAME] section: nothing to do"};
  return spec;
}

}  // namespace troupe::chaos
