#include "actors/cpu_backend.hpp"

#include "model/cpu_step_runner.hpp"
#include "model/local_experts.hpp"
#include "transport/in_process_experts.hpp"

namespace troupe {
namespace {

// Keeps the model alive for as long as the transport may call into its experts.
class owned_experts final : public expert_executor {
 public:
  owned_experts(std::shared_ptr<const qwen3_moe> model, int first, int last)
      : model_(std::move(model)), experts_(model_->weights(), first, last) {}
  status run(int layer, const float* x, int tokens, int k, const int* chosen, const float* weights,
             float* out) override {
    return experts_.run(layer, x, tokens, k, chosen, weights, out);
  }

 private:
  std::shared_ptr<const qwen3_moe> model_;
  local_experts experts_;
};

}  // namespace

result<cpu_node_backend> make_cpu_node_backend(const backend_options& options) {
  auto loaded = qwen3_moe::load(options.model_dir, options.dummy_weights);
  if (!loaded) return loaded.err();
  auto model = std::make_shared<const qwen3_moe>(std::move(*loaded));
  const model_config& c = model->config();
  const size_t bytes_per_block =
      size_t(options.block_size) * size_t(c.num_kv_heads) * size_t(c.head_dim) * 4 * 2 * size_t(c.num_layers);
  const size_t kv_bytes = options.kv_cache_bytes > 0 ? options.kv_cache_bytes : size_t(1) << 30;
  const int num_blocks = int(kv_bytes / bytes_per_block);
  auto groups = std::make_shared<in_process_experts>(c.num_experts, c.hidden_size);
  const int block_size = options.block_size;
  cpu_node_backend b{{c, num_blocks, {}, {}}, groups, {}};
  b.make_runner_over = [model, num_blocks, block_size](int first, int last, std::shared_ptr<expert_executor> experts)
      -> result<std::unique_ptr<step_runner>> {
    return std::unique_ptr<step_runner>(
        std::make_unique<cpu_step_runner>(model, std::move(experts), first, last, num_blocks, block_size));
  };
  b.backend.make_runner = [over = b.make_runner_over, groups](int first, int last) {
    return over(first, last, groups);
  };
  b.backend.attach_experts = [model, groups](const std::string& group, int first, int last) -> std::function<void()> {
    groups->attach(group, std::make_shared<owned_experts>(model, first, last), first, last);
    return [groups, group] { groups->detach(group); };
  };
  return b;
}

result<compute_backend> make_cpu_backend(const backend_options& options) {
  auto b = make_cpu_node_backend(options);
  if (!b) return b.err();
  return std::move(b->backend);
}

}  // namespace troupe
