#include "actors/expert_group.hpp"

#include "model/local_experts.hpp"

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

expert_group_actor::behavior_type expert_group(expert_group_actor::stateful_pointer<expert_group_state> self,
                                               expert_group_options options, std::shared_ptr<const qwen3_moe> model,
                                               std::shared_ptr<in_process_experts> transport,
                                               health_monitor_actor health) {
  transport->attach(options.name, std::make_shared<owned_experts>(std::move(model), options.first_expert, options.last_expert),
                    options.first_expert, options.last_expert);
  self->attach_functor([transport, name = options.name] { transport->detach(name); });
  self->send(health, ready_atom::value, options.name);
  return {
      [=](crash_atom) { self->quit(caf::make_error(caf::sec::runtime_error, "crash drill")); },
  };
}

}  // namespace troupe
