#include "engine/cpu_backend.hpp"

#include "model/cpu_step_runner.hpp"
#include "model/local_experts.hpp"
#include "transport/in_process_experts.hpp"

namespace troupe {
namespace {

// Keeps the model alive for as long as the transport may call into its experts.
class owned_experts final : public expert_executor {
 public:
  owned_experts(std::shared_ptr<const moe_model> model, int first, int last)
      : model_(std::move(model)), experts_(model_->weights(), first, last) {}
  status run(int layer, const float* x, int tokens, int k, const int* chosen, const float* weights,
             float* out) override {
    return experts_.run(layer, x, tokens, k, chosen, weights, out);
  }

 private:
  std::shared_ptr<const moe_model> model_;
  local_experts experts_;
};

}  // namespace

result<cpu_node_backend> make_cpu_node_backend(const backend_options& options) {
  auto loaded = load_model(options.model_dir, options.dummy_weights);
  if (!loaded) return loaded.err();
  std::shared_ptr<const moe_model> model = std::move(*loaded);
  const model_config& c = model->config();
  const size_t kv_bytes = options.kv_cache_bytes > 0 ? options.kv_cache_bytes : size_t(1) << 30;
  // Linear-attention layers keep one recurrent state per running sequence, out of the same budget.
  const int state_slots = c.has_linear_layers() ? options.max_num_seqs : 0;
  const size_t state_bytes = size_t(state_slots) * size_t(state_slot_bytes(c));
  if (state_bytes >= kv_bytes)
    return error{"the recurrent state of " + std::to_string(state_slots) + " sequences (--max-num-seqs) takes " +
                 std::to_string(state_bytes >> 20) + " MiB, more than the KV cache's " +
                 std::to_string(kv_bytes >> 20) + " MiB: give --kv-cache-mb more or run fewer sequences"};
  const int num_blocks = int((kv_bytes - state_bytes) / size_t(kv_block_bytes(c, options.block_size)));
  auto groups = std::make_shared<in_process_experts>(c.num_experts, c.hidden_size);
  const int block_size = options.block_size;
  cpu_node_backend b{{c, num_blocks, {}, {}, state_slots}, groups, {}};
  b.make_runner_over = [model, num_blocks, block_size, state_slots](
                           int first, int last,
                           std::shared_ptr<expert_executor> experts) -> result<std::unique_ptr<step_runner>> {
    return std::unique_ptr<step_runner>(
        std::make_unique<cpu_step_runner>(model, std::move(experts), first, last, num_blocks, block_size, state_slots));
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
