#pragma once
// Spawns the actors of a one-node engine: health_monitor, kv_manager, scheduler, and a
// supervisor over the pipeline stages (stage_0 .. stage_{n-1}, each a layer range with its
// own KV pool) and the expert groups, which reach each other through the in-process
// transport of the chosen device. The multi-node node_agent builds on the same pieces.
#include "actors/actors.hpp"
#include "actors/scheduler.hpp"
#include "actors/supervisor.hpp"
#include "base/result.hpp"
#include "engine/pipeline_layout.hpp"
#include "model/compute_backend.hpp"
#include "text/grammar/token_vocabulary.hpp"

namespace troupe {

enum class device_kind { cpu, cuda };

struct engine_options {
  backend_options backend;
  device_kind device = device_kind::cpu;
  int max_model_len = 0;  // 0: the model's max_position_embeddings
  int expert_groups = 1;
  // Pipeline stages: `pipeline_stages` of about equal layer counts, unless
  // `pipeline_layers` gives each stage's layers. On a GPU the stages share the device.
  int pipeline_stages = 1;
  std::vector<layer_range> pipeline_layers;
  scheduler_options scheduler;
  restart_policy restarts;  // replace_stuck is set for CPU stages
  // A stage in one step longer than this is declared stuck, and replaced on the CPU.
  std::chrono::milliseconds progress_timeout{30000};
  // The tokenizer's, for constrained decoding; null: the engine takes no constrained requests.
  std::shared_ptr<const token_vocabulary> vocabulary;
};

struct engine {
  model_config config;
  health_monitor_actor health;
  kv_manager_actor kv;
  scheduler_actor scheduler;
  caf::actor supervisor;
  int num_blocks = 0;
  int max_model_len = 0;
  int pipeline_stages = 0;  // stage_0 .. stage_{n-1}, children of the supervisor

  // Stops the engine's actors and waits until they are gone.
  void stop(caf::actor_system& system);
};

result<engine> start_local_engine(caf::actor_system& system, const engine_options& options);

}  // namespace troupe
