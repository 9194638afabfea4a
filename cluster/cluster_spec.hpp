#pragma once
// cluster.conf in native types: the processes (nodes) of a cluster, where each replica's
// pipeline stages and expert groups run, and the model, gateway and engine settings. A
// single-node file (no [cluster], at most one [node.*], no [replica.*]) is what
// `troupe serve --config` takes; anything more is a cluster, for `troupe cluster up`.
// read_cluster_spec checks everything the file alone can tell; validate_against_model
// checks what needs the model's config.json (its layer and expert counts). Every error
// names the file and line.
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "cluster/ini_file.hpp"
#include "model/model_config.hpp"

namespace troupe {

enum class transport_kind { ucx, nccl };
enum class weight_format { safetensors, dummy };

struct cluster_settings {
  std::string name = "troupe";
  std::string secret;  // what a node presents to join: `secret`, or the file `secret_file` names
  transport_kind transport = transport_kind::ucx;
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds connection_timeout{5000};
  std::chrono::seconds startup_timeout{120};
  std::chrono::seconds step_timeout{60};
  // A node process `cluster up` started that ends more than max_node_restarts times within
  // the window is left down (a crash loop): a chaos drill that kills one more often raises it.
  int max_node_restarts = 20;
  std::chrono::seconds node_restart_window{60};
  // The control links (CAF) are mutual TLS: `certs` holds ca.crt and each node's NODE.crt
  // and NODE.key (`troupe cluster certs` makes them). `insecure = yes` runs them plaintext
  // and unauthenticated instead, for trusted networks only.
  std::filesystem::path certs;  // a relative path is taken from the file's folder; empty: not given
  bool insecure = false;
};

struct model_settings {
  std::filesystem::path path;     // a relative path is taken from the file's folder; empty: not given
  std::string served_model_name;  // empty: the path's last part; several names: aliases
  weight_format load_format = weight_format::safetensors;
};

struct gateway_settings {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string api_key;                     // empty: no authentication
  std::string admin_key;                   // for /admin/*; empty: api_key serves there too
  bool protect_metrics = false;            // /metrics asks for api_key or admin_key
  bool special_tokens_in_content = false;  // chat content may hold special tokens (the old behaviour)
  int max_pending = 1024;
  int max_connections = 4096;  // open client connections (gateway/http/http_server.hpp)
  // A client whose response has waited this long without it taking any is disconnected.
  std::chrono::milliseconds send_timeout{30000};
  std::string node;                     // runs the gateway, scheduler and kv_manager; the first node unless given
  std::string routing = "round_robin";  // among replicas: round_robin, least_load or prefix_aware
};

struct engine_settings {
  int max_num_seqs = 64;
  int max_num_batched_tokens = 2048;
  int max_model_len = 0;  // 0: the model's max_position_embeddings
  int kv_cache_mb = 0;    // 0: the backend decides
  int block_size = 16;
  int pipeline_stages = 1;         // single-node files only; a cluster's replicas list their stages
  int pipeline_micro_batches = 0;  // steps in flight at once; 0: one per stage
  // A stage in one step longer than this is stuck: declared failed and replaced.
  std::chrono::milliseconds progress_timeout{30000};
};

struct node_spec {
  std::string name;
  std::string address;    // host name or IP literal; empty only in a single-node file
  int port = 7100;        // control port (CAF middleman); 0: any free one, loopback addresses only
  std::vector<int> gpus;  // CUDA ordinals, in the file's order; empty: the node computes on its CPU
  int expert_groups = 1;  // single-node files only; a cluster's replicas list their groups
  // The network namespace (`ip netns`) `troupe cluster up` starts its process in; empty:
  // the head's. Port 0 nodes only (the head starts them), at an address reachable there.
  std::string netns;
  int line = 0;
};

// One pipeline stage (a layer range) or expert group (an expert range) of a replica.
struct placement {
  std::string node;
  std::optional<int> gpu;  // one of the node's gpus (its first when the file names none); unset on a CPU node
  int first = 0;
  std::optional<int> last;  // inclusive; unset only where defaulted: through the model's last
  int line = 0;             // of its `stages` or `experts` key, or of the replica's header when defaulted
};

struct replica_spec {
  std::string name;
  std::vector<placement> stages;  // pipeline order; contiguous from layer 0
  // File order; disjoint and without gaps from expert 0. None listed: one group of all
  // experts beside the first stage, or on every stage's node when the stages are on GPUs.
  std::vector<placement> experts;
  double weight = 1;  // share of traffic, relative to the other replicas
  int line = 0;
  // Started by `troupe cluster up`; false: a standby, started at runtime by
  // POST /admin/replicas/NAME/add (or `troupe cluster add`).
  bool start = true;
};

struct cluster_spec {
  std::filesystem::path file;
  bool is_cluster = false;  // [cluster], several nodes or a [replica.*]: for `troupe cluster up`
  cluster_settings cluster;
  model_settings model;
  gateway_settings gateway;
  engine_settings engine;
  std::vector<node_spec> nodes;  // file order; a single-node file may have none
  std::vector<replica_spec>
      replicas;  // file order; one `main` when a cluster file lists none; none in single-node files

  const node_spec* node(std::string_view name) const;
};

result<cluster_spec> read_cluster_spec(const std::filesystem::path& file);

// The names a model is served under: the words of a served_model_name ("qwen3 q3", as
// vLLM's --served-model-name takes several), the first the one /v1/models lists first.
std::vector<std::string> served_model_names(const std::string& served_model_name);
// The same from a file already read: cluster_conf_flags reads the file once for both.
result<cluster_spec> cluster_spec_of(const ini_file& file);

// 127.x.y.z, ::1 or localhost.
bool is_loopback_address(const std::string& address);

// Node `me`'s address, then every other node's: its activation links (UCX) use the network
// interfaces of this host that hold them (several nodes on one host may be given different
// addresses of it).
std::vector<std::string> link_addresses(const cluster_spec& spec, const node_spec& me);

// The first section that makes `file` a cluster's: [cluster], a [replica.*] or a second
// [node.*]. None (null) in a single-node file.
const ini_section* first_cluster_section(const ini_file& file);

// Every replica's stages cover the model's layers and its expert groups the model's
// experts, each exactly once (a model without experts takes no `experts`).
status validate_against_model(const cluster_spec& spec, const model_config& model);

// A file read, checked for what this version runs on GPUs (check_gpu_placements) and
// against its model's config.json ([model] path), as the `troupe cluster` commands take it:
// the first error, file:line where the file is at fault.
struct cluster_with_model {
  cluster_spec spec;
  model_config model;
};
result<cluster_with_model> read_cluster_with_model(const std::filesystem::path& file);

}  // namespace troupe
