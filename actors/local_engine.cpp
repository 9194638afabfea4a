#include "actors/local_engine.hpp"

#include <algorithm>

#include "actors/expert_group.hpp"
#include "actors/health_monitor.hpp"
#include "actors/kv_manager.hpp"
#include "actors/shutdown.hpp"
#include "actors/stage.hpp"
#include "engine/cpu_backend.hpp"
#include "transport/in_process_transport.hpp"
#ifdef TROUPE_WITH_CUDA
#include "model/cuda/gpu_backend.hpp"
#endif

namespace troupe {
namespace {

result<compute_backend> make_backend(const engine_options& options) {
  backend_options b = options.backend;
  b.max_num_seqs = options.scheduler.max_num_seqs;
  b.max_num_batched_tokens = options.scheduler.max_num_batched_tokens;
  b.max_model_len = options.max_model_len;
  if (options.device == device_kind::cpu) return make_cpu_backend(b);
#ifdef TROUPE_WITH_CUDA
  if (options.expert_groups != 1)
    return error{
        "--device cuda serves its experts as one group per GPU; expert groups across GPUs come with a cluster"};
  // The stages share the GPU, its weights and its experts; each has activations of its own.
  b.pipeline_stages = options.pipeline_layers.empty() ? options.pipeline_stages : int(options.pipeline_layers.size());
  return make_gpu_backend(b);
#else
  return error{"--device cuda: this build has no CUDA (nvcc was not found when it was configured)"};
#endif
}

}  // namespace

result<engine> start_local_engine(caf::actor_system& system, const engine_options& options) {
  auto backend = make_backend(options);
  if (!backend) return backend.err();
  engine e;
  e.config = backend->config;
  const model_config& c = e.config;
  auto layout = pipeline_layout(options.pipeline_stages, options.pipeline_layers, c.num_layers);
  if (!layout) return layout.err();
  e.num_blocks = backend->num_blocks;
  const int block_size = options.backend.block_size;
  const int model_len = options.max_model_len > 0 ? options.max_model_len : c.max_position_embeddings;
  e.max_model_len = std::min(model_len, e.num_blocks * block_size);
  if (e.max_model_len < 2)
    return error{"the KV cache (" + std::to_string(e.num_blocks) + " blocks of " + std::to_string(block_size) +
                 " tokens) holds fewer than two tokens of this model; give it more memory"};
  const int groups = std::clamp(options.expert_groups, 1, c.num_experts);

  e.health = system.spawn(health_monitor, options.progress_timeout);
  e.kv = system.spawn(kv_manager, e.num_blocks, block_size, backend->num_state_slots);
  scheduler_options sched = options.scheduler;
  sched.max_model_len = e.max_model_len;
  sched.pipeline_stages = int(layout->size());
  e.pipeline_stages = sched.pipeline_stages;
  sched.expert_groups = groups;
  e.scheduler = system.spawn(scheduler, sched, e.kv);

  std::vector<child_spec> children;
  for (int g = 0; g < groups; ++g) {
    expert_group_options opts{expert_group_name(g), c.num_experts * g / groups, c.num_experts * (g + 1) / groups, {}};
    children.push_back(expert_group_child(opts, backend->attach_experts, e.health));
  }
  const auto grammars = make_engine_grammar_cache();
  // The stages hand their rows on through one in-process endpoint, a peer of itself.
  auto rows = std::make_shared<in_process_transport>(std::make_shared<in_process_hub>());
  auto self_peer = rows->connect(rows->address());
  if (!self_peer) return self_peer.err();
  for (size_t k = 0; k < layout->size(); ++k) {
    const layer_range layers = (*layout)[k];
    stage_options opts{stage_name(int(k)),
                       int(k),
                       layers.first,
                       layers.last,
                       layers.last == c.num_layers,
                       c.hidden_size,
                       {rows, *self_peer},
                       ready_vocabulary(options.vocabulary),
                       grammars,
                       {},
                       {}};
    children.push_back(stage_child(opts, backend->make_runner, e.health));
  }
  restart_policy restarts = options.restarts;
  restarts.replace_stuck = options.device == device_kind::cpu;
  e.supervisor =
      system.spawn(supervisor, std::move(children), restarts, e.health, caf::actor_cast<caf::actor>(e.scheduler));
  return e;
}

void engine::stop(caf::actor_system& system) {
  caf::scoped_actor self{system, /*hide=*/true};
  shutdown(self, {supervisor, caf::actor_cast<caf::actor>(scheduler), caf::actor_cast<caf::actor>(kv),
                  caf::actor_cast<caf::actor>(health)});
}

}  // namespace troupe
