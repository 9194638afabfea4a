#pragma once
// Spawns the actors of a one-node engine: health_monitor, kv_manager, scheduler, and a
// supervisor over one stage (every layer) and the expert groups, which reach each other
// through the in-process transport. The multi-node node_agent builds on the same pieces.
#include <filesystem>
#include <memory>

#include "actors/actors.hpp"
#include "actors/scheduler.hpp"
#include "actors/supervisor.hpp"
#include "base/result.hpp"
#include "model/qwen3_moe.hpp"
#include "transport/in_process_experts.hpp"

namespace troupe {

struct engine_options {
  std::filesystem::path model_dir;
  bool dummy_weights = false;
  int block_size = 16;
  size_t kv_cache_bytes = size_t(1) << 30;  // fp32 keys and values of every layer
  int max_model_len = 0;                     // 0: the model's max_position_embeddings
  int expert_groups = 1;
  scheduler_options scheduler;
  restart_policy restarts;
};

struct engine {
  std::shared_ptr<const qwen3_moe> model;  // outlives the actors that use it
  std::shared_ptr<in_process_experts> transport;
  health_monitor_actor health;
  kv_manager_actor kv;
  scheduler_actor scheduler;
  caf::actor supervisor;
  int num_blocks = 0;
  int max_model_len = 0;

  // Stops the engine's actors and waits until they are gone.
  void stop(caf::actor_system& system);
};

result<engine> start_local_engine(caf::actor_system& system, const engine_options& options);

}  // namespace troupe
