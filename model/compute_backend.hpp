#pragma once
// What an engine computes with, on the CPU or a GPU: the model's shape, how many KV blocks
// its memory holds, how stages build their step runners and how expert groups attach.
#include <filesystem>

#include "model/expert_executor.hpp"
#include "model/model_config.hpp"
#include "model/step_runner.hpp"
#include "model/weight_share.hpp"

namespace troupe {

struct backend_options {
  std::filesystem::path model_dir;
  bool dummy_weights = false;
  int block_size = 16;
  size_t kv_cache_bytes = 0;            // 0: 1 GiB on the CPU, what gpu_memory_utilization leaves on a GPU
  double gpu_memory_utilization = 0.9;  // of the device's memory, weights included
  int max_num_seqs = 64;                // a step's most sequences and tokens: GPU buffers
  int max_num_batched_tokens = 2048;
  int max_model_len = 0;       // 0: the model's max_position_embeddings
  bool enforce_eager = false;  // GPU: no CUDA graphs for decode steps
  int device = 0;              // GPU: the CUDA ordinal this process computes on
  // GPU: the pipeline stages this process runs on the device, each with activations of its
  // own (the KV cache is split among them by layers); 0 for a cluster node that only serves
  // experts (no KV cache).
  int pipeline_stages = 1;
  // GPU: how many of the model's layers those stages hold, for the KV cache's block count
  // (a cluster node holds only its stages' layers); 0: all of them.
  int kv_layers = 0;
  // GPU: the weights this process loads (a cluster node's stages' and expert group's; the
  // CPU maps a checkpoint and reads what it touches).
  weight_share share;
  // GPU: device memory kept out of the KV cache's budget for what a cluster node allocates
  // beside its stages (expert parallelism's transfer buffers).
  size_t reserved_bytes = 0;
};

struct compute_backend {
  model_config config;
  int num_blocks = 0;
  step_runner_factory make_runner;
  experts_attacher attach_experts;
  int num_state_slots = 0;  // recurrent states (models with linear-attention layers), one per running sequence
};

}  // namespace troupe
