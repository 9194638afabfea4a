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

result<compute_backend> make_cpu_backend(const backend_options& options) {
  auto loaded = qwen3_moe::load(options.model_dir, options.dummy_weights);
  if (!loaded) return loaded.err();
  auto model = std::make_shared<const qwen3_moe>(std::move(*loaded));
  const model_config& c = model->config();
  const size_t bytes_per_block =
      size_t(options.block_size) * size_t(c.num_kv_heads) * size_t(c.head_dim) * 4 * 2 * size_t(c.num_layers);
  const size_t kv_bytes = options.kv_cache_bytes > 0 ? options.kv_cache_bytes : size_t(1) << 30;
  const int num_blocks = int(kv_bytes / bytes_per_block);
  auto transport = std::make_shared<in_process_experts>(c.num_experts, c.hidden_size);
  const int block_size = options.block_size;
  compute_backend b{c, num_blocks, {}, {}};
  b.make_runner = [model, transport, num_blocks, block_size](int first, int last) -> result<std::unique_ptr<step_runner>> {
    return std::unique_ptr<step_runner>(std::make_unique<cpu_step_runner>(
        model, std::static_pointer_cast<expert_executor>(transport), first, last, num_blocks, block_size));
  };
  b.attach_experts = [model, transport](const std::string& group, int first, int last) -> std::function<void()> {
    transport->attach(group, std::make_shared<owned_experts>(model, first, last), first, last);
    return [transport, group] { transport->detach(group); };
  };
  return b;
}

}  // namespace troupe
