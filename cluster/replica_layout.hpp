#pragma once
// A cluster file's replicas made whole and checked against its nodes: defaults for what a
// replica leaves out, each stage and expert group on a defined node and one of its
// devices, stages contiguous from layer 0 in pipeline order, expert groups disjoint and
// without gaps from expert 0, some replica with traffic. The model's layer and expert
// counts are validate_against_model's.
#include "base/result.hpp"
#include "cluster/cluster_spec.hpp"
#include "cluster/ini_file.hpp"

namespace troupe {

status lay_out_replicas(const ini_file& file, cluster_spec& spec);

// "a:0-23", or "a:1:0-23" with its GPU; "a:0-" when it runs through the model's last.
std::string placement_text(const placement& p);

}  // namespace troupe
