#include "actors/local_engine.hpp"

#include <algorithm>

#include "actors/expert_group.hpp"
#include "actors/health_monitor.hpp"
#include "actors/kv_manager.hpp"
#include "actors/stage.hpp"

namespace troupe {

result<engine> start_local_engine(caf::actor_system& system, const engine_options& options) {
  auto loaded = qwen3_moe::load(options.model_dir, options.dummy_weights);
  if (!loaded) return loaded.err();
  engine e;
  e.model = std::make_shared<const qwen3_moe>(std::move(*loaded));
  const model_config& c = e.model->config();
  const size_t bytes_per_block =
      size_t(options.block_size) * size_t(c.num_kv_heads) * size_t(c.head_dim) * 4 * 2 * size_t(c.num_layers);
  e.num_blocks = int(options.kv_cache_bytes / bytes_per_block);
  const int model_len = options.max_model_len > 0 ? options.max_model_len : c.max_position_embeddings;
  e.max_model_len = std::min(model_len, e.num_blocks * options.block_size);
  if (e.max_model_len < 2)
    return error{"the KV cache (" + std::to_string(options.kv_cache_bytes >> 20) +
                 " MiB) holds fewer than two tokens of this model; give it more memory"};
  const int groups = std::clamp(options.expert_groups, 1, c.num_experts);

  e.transport = std::make_shared<in_process_experts>(c.num_experts, c.hidden_size);
  e.health = system.spawn(health_monitor);
  e.kv = system.spawn(kv_manager, e.num_blocks, options.block_size);
  scheduler_options sched = options.scheduler;
  sched.max_model_len = e.max_model_len;
  e.scheduler = system.spawn(scheduler, sched, e.kv);

  std::vector<child_spec> children;
  for (int g = 0; g < groups; ++g) {
    expert_group_options opts{"expert_group_" + std::to_string(g), c.num_experts * g / groups,
                              c.num_experts * (g + 1) / groups};
    children.push_back({opts.name, [opts, model = e.model, transport = e.transport, health = e.health](caf::local_actor* parent) {
                          return caf::actor_cast<caf::actor>(
                              parent->spawn<caf::detached>(expert_group, opts, model, transport, health));
                        }});
  }
  stage_options stage_opts{"stage_0", 0, c.num_layers, e.num_blocks, options.block_size};
  children.push_back({stage_opts.name, [stage_opts, model = e.model, transport = e.transport,
                                        health = e.health](caf::local_actor* parent) {
                        return caf::actor_cast<caf::actor>(parent->spawn<caf::detached>(
                            stage, stage_opts, model, std::static_pointer_cast<expert_executor>(transport), health));
                      }});
  e.supervisor = system.spawn(supervisor, std::move(children), options.restarts, e.health,
                              caf::actor_cast<caf::actor>(e.scheduler));
  return e;
}

void engine::stop(caf::actor_system& system) {
  caf::scoped_actor self{system, /*hide=*/true};
  const std::vector<caf::actor> actors{supervisor, caf::actor_cast<caf::actor>(scheduler),
                                       caf::actor_cast<caf::actor>(kv), caf::actor_cast<caf::actor>(health)};
  for (const caf::actor& a : actors) {
    self->monitor(a);
    self->send_exit(a, caf::exit_reason::user_shutdown);
  }
  for (size_t i = 0; i < actors.size(); ++i) self->receive([](const caf::down_msg&) {});
}

}  // namespace troupe
