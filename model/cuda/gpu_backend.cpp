#include "model/cuda/gpu_backend.hpp"

#include <algorithm>
#include <cstdio>

#include "kernels/cuda/check.cuh"
#include "model/cuda/gpu_step_runner.hpp"

namespace troupe {

result<compute_backend> make_gpu_backend(const backend_options& options) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return error{"--device cuda: no CUDA device is visible"};
  }
  auto weights = load_gpu_weights(options.model_dir, options.dummy_weights);
  if (!weights) return weights.err();
  const model_config& c = (*weights)->config;
  auto experts = std::make_shared<gpu_experts>(*weights);
  gpu_runner_options r{0, options.block_size,
                       options.max_model_len > 0 ? options.max_model_len : c.max_position_embeddings,
                       options.max_num_seqs, std::max(options.max_num_batched_tokens, options.max_num_seqs),
                       !options.enforce_eager};
  const size_t block_bytes = size_t(options.block_size) * size_t(c.num_kv_heads) * size_t(c.head_dim) * 2 * 2 *
                             size_t(c.num_layers);
  size_t kv_bytes = options.kv_cache_bytes;
  if (kv_bytes == 0) {  // what the memory budget leaves after the weights and activations
    size_t free = 0, total = 0;
    TROUPE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    const size_t budget = size_t(double(total) * options.gpu_memory_utilization);
    const size_t used = total - free + gpu_step_runner::activation_bytes(**weights, *experts, r);
    kv_bytes = budget > used ? budget - used : 0;
  }
  r.num_blocks = int(std::min<size_t>(kv_bytes / block_bytes, size_t(1) << 30));
  std::fprintf(stderr, "troupe: KV cache on the GPU: %d blocks of %d tokens (%zu MiB)\n", r.num_blocks,
               options.block_size, (size_t(r.num_blocks) * block_bytes) >> 20);
  // Allocated once: a restarted stage re-carves it instead of needing a second KV cache.
  auto memory = device_arena::allocate(gpu_step_runner::memory_bytes(**weights, *experts, r),
                                       "the stage's activations and KV cache");
  if (!memory) return memory.err();
  auto stage_memory = std::make_shared<device_arena>(std::move(*memory));
  compute_backend b{c, r.num_blocks, {}, {}};
  b.make_runner = [weights = *weights, experts, r, stage_memory](int first, int last) -> result<std::unique_ptr<step_runner>> {
    if (first != 0 || last != weights->config.num_layers)
      return error{"a GPU stage holds every layer; pipeline stages across GPUs come with a cluster"};
    return gpu_step_runner::create(weights, experts, r, stage_memory);
  };
  b.attach_experts = [experts](const std::string& group, int first, int last) -> std::function<void()> {
    experts->attach(group, first, last);
    return [experts, group] { experts->detach(group); };
  };
  return b;
}

}  // namespace troupe
