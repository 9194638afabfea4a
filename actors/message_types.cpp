#include "actors/message_types.hpp"

#include "actors/actors.hpp"

namespace troupe {

void add_message_types(caf::actor_system_config& config) {
  config.add_message_type<byte_set>("troupe::byte_set")
      .add_message_type<grammar_symbol>("troupe::grammar_symbol")
      .add_message_type<grammar_alternative>("troupe::grammar_alternative")
      .add_message_type<grammar_rule>("troupe::grammar_rule")
      .add_message_type<grammar>("troupe::grammar")
      .add_message_type<output_constraint>("troupe::output_constraint")
      .add_message_type<sampling_params>("troupe::sampling_params")
      .add_message_type<generation_request>("troupe::generation_request")
      .add_message_type<top_logprob>("troupe::top_logprob")
      .add_message_type<sampled_token>("troupe::sampled_token")
      .add_message_type<token_event>("troupe::token_event")
      .add_message_type<step_sequence>("troupe::step_sequence")
      .add_message_type<step_plan>("troupe::step_plan")
      .add_message_type<step_result>("troupe::step_result")
      .add_message_type<kv_admission>("troupe::kv_admission")
      .add_message_type<kv_usage>("troupe::kv_usage")
      .add_message_type<engine_stats>("troupe::engine_stats")
      .add_message_type<component_health>("troupe::component_health")
      .add_message_type<node_description>("troupe::node_description")
      .add_message_type<std::vector<uint8_t>>("std::vector<uint8_t>")
      .add_message_type<std::vector<std::vector<uint8_t>>>("std::vector<std::vector<uint8_t>>")
      .add_message_type<scheduler_actor>("troupe::scheduler_actor")
      .add_message_type<std::vector<scheduler_actor>>("std::vector<troupe::scheduler_actor>")
      .add_message_type<health_monitor_actor>("troupe::health_monitor_actor")
      .add_message_type<stage_actor>("troupe::stage_actor")
      .add_message_type<std::vector<component_health>>("std::vector<troupe::component_health>")
      .add_message_type<kv_admit>("troupe::kv_admit")
      .add_message_type<kv_grow>("troupe::kv_grow")
      .add_message_type<kv_commit>("troupe::kv_commit")
      .add_message_type<kv_step_request>("troupe::kv_step_request")
      .add_message_type<kv_step_reply>("troupe::kv_step_reply")
      .add_message_type<expert_session>("troupe::expert_session")
      .add_message_type<expert_step>("troupe::expert_step");
}

}  // namespace troupe
