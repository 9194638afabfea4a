#include "model/cuda/gpu_backend.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "kernels/cuda/check.cuh"
#include "model/cuda/gpu_step_runner.hpp"
#include "model/kv_pool.hpp"

namespace troupe {
namespace {

// Each pipeline stage's activations and KV pool, allocated when the stage first starts and
// kept: a restarted stage re-carves its own instead of needing a second KV cache.
class stage_memories {
 public:
  result<std::shared_ptr<device_arena>> of(int first, int last, size_t bytes) {
    std::lock_guard lock(mutex_);
    auto& memory = by_range_[{first, last}];
    if (memory == nullptr) {
      auto allocated = device_arena::allocate(bytes, "the activations and KV cache of the stage of layers [" +
                                                         std::to_string(first) + ", " + std::to_string(last) + ")");
      if (!allocated) return allocated.err();
      memory = std::make_shared<device_arena>(std::move(*allocated));
    }
    return memory;
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<int, int>, std::shared_ptr<device_arena>> by_range_;
};

}  // namespace

int visible_cuda_devices() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess) return devices;
  cudaGetLastError();
  return 0;
}

std::string cuda_devices_text(int devices) {
  return "this machine has " + std::to_string(devices) + " CUDA device" + (devices == 1 ? "" : "s") +
         " (cuda:0 to cuda:" + std::to_string(devices - 1) + ")";
}

result<compute_backend> make_gpu_backend(const backend_options& options) {
  auto parts = make_gpu_backend_parts(options);
  if (!parts) return parts.err();
  return std::move(parts->backend);
}

result<gpu_backend_parts> make_gpu_backend_parts(const backend_options& options) {
  const int devices = visible_cuda_devices();
  if (devices == 0) return error{"--device cuda: no CUDA device is visible"};
  if (options.device < 0 || options.device >= devices)
    return error{"cuda:" + std::to_string(options.device) + ": " + cuda_devices_text(devices)};
  TROUPE_CUDA_CHECK(cudaSetDevice(options.device));
  auto weights = load_gpu_weights(options.model_dir, options.dummy_weights, options.share);
  if (!weights) return weights.err();
  const model_config& c = (*weights)->config;
  std::fprintf(stderr, "troupe: weights on cuda:%d: %s (%zu MiB)\n", options.device, options.share.text().c_str(),
               (*weights)->memory.used() >> 20);
  auto experts = std::make_shared<gpu_experts>(*weights);
  gpu_runner_options r{0,
                       options.block_size,
                       options.max_model_len > 0 ? options.max_model_len : c.max_position_embeddings,
                       options.max_num_seqs,
                       std::max(options.max_num_batched_tokens, options.max_num_seqs),
                       !options.enforce_eager};
  r.device = options.device;
  const int stages = std::max(options.pipeline_stages, 0);
  // A block holds its tokens' keys and values in every layer this process has, whichever
  // of its stages has the layer.
  const int kv_layers = options.kv_layers > 0 ? std::min(options.kv_layers, c.num_layers) : c.num_layers;
  // Only full-attention layers keep keys and values; of a node's share of the layers, at
  // most all of the model's such layers.
  int attention_layers = 0;
  for (int i = 0; i < c.num_layers; ++i) attention_layers += !c.is_linear_layer(i);
  const size_t block_bytes = size_t(options.block_size) * size_t(c.num_kv_heads) * size_t(c.head_dim) * 2 * 2 *
                             size_t(std::max(std::min(kv_layers, attention_layers), 1));
  // Linear-attention layers keep one recurrent state per sequence the engine may run.
  const int state_slots = c.has_linear_layers() ? options.max_num_seqs : 0;
  const size_t state_bytes = size_t(state_slots) * size_t(state_slot_bytes(c));
  size_t kv_bytes = options.kv_cache_bytes;
  if (kv_bytes == 0) {  // what the memory budget leaves after the weights, every stage's activations and the reserve
    size_t free = 0, total = 0;
    TROUPE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    const size_t budget = size_t(double(total) * options.gpu_memory_utilization);
    const size_t used = total - free + size_t(stages) * gpu_step_runner::activation_bytes(**weights, *experts, r) +
                        options.reserved_bytes;
    kv_bytes = budget > used ? budget - used : 0;
  }
  // The recurrent states come out of the same budget, as on the CPU.
  if (stages > 0 && state_bytes > 0 && state_bytes >= kv_bytes)
    return error{"the recurrent state of " + std::to_string(state_slots) + " sequences (--max-num-seqs) takes " +
                 std::to_string(state_bytes >> 20) + " MiB, more than the KV cache's " +
                 std::to_string(kv_bytes >> 20) + " MiB: give it more memory or run fewer sequences"};
  kv_bytes -= std::min(kv_bytes, state_bytes);
  r.num_blocks = stages == 0 ? 0 : int(std::min<size_t>(kv_bytes / block_bytes, size_t(1) << 30));
  if (stages > 0 && state_slots > 0)
    std::fprintf(stderr,
                 "troupe: KV cache on cuda:%d: %d blocks of %d tokens (%zu MiB), recurrent states of %d "
                 "sequences (%zu MiB)\n",
                 options.device, r.num_blocks, options.block_size, (size_t(r.num_blocks) * block_bytes) >> 20,
                 state_slots, state_bytes >> 20);
  else if (stages > 0)
    std::fprintf(stderr, "troupe: KV cache on cuda:%d: %d blocks of %d tokens (%zu MiB)\n", options.device,
                 r.num_blocks, options.block_size, (size_t(r.num_blocks) * block_bytes) >> 20);
  auto memories = std::make_shared<stage_memories>();
  // One stage of the whole model is allocated now, so a device with too little fails the
  // start, not the stage (a cluster node's one stage of some layers allocates when it starts).
  if (stages == 1 && kv_layers == c.num_layers) {
    r.last_layer = c.num_layers;
    auto memory = memories->of(0, c.num_layers, gpu_step_runner::memory_bytes(**weights, *experts, r));
    if (!memory) return memory.err();
  }
  gpu_backend_parts parts{{c, r.num_blocks, {}, {}, state_slots}, *weights, experts, {}};
  parts.make_runner_with = [weights = *weights, experts, r, memories](
                               int first, int last,
                               std::shared_ptr<gpu_remote_experts> remote) -> result<std::unique_ptr<step_runner>> {
    if (auto inside = gpu_step_runner::check_layer_range(first, last, weights->config.num_layers); !inside)
      return inside.err();
    gpu_runner_options stage = r;
    stage.first_layer = first;
    stage.last_layer = last;
    TROUPE_CUDA_CHECK(cudaSetDevice(stage.device));
    auto memory = memories->of(first, last, gpu_step_runner::memory_bytes(*weights, *experts, stage));
    if (!memory) return memory.err();
    return gpu_step_runner::create(weights, experts, stage, std::move(*memory), std::move(remote));
  };
  parts.backend.make_runner = [with = parts.make_runner_with](int first, int last) {
    return with(first, last, nullptr);
  };
  parts.backend.attach_experts = [experts](const std::string& group, int first, int last) -> std::function<void()> {
    experts->attach(group, first, last);
    return [experts, group] { experts->detach(group); };
  };
  return parts;
}

}  // namespace troupe
