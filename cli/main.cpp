#include <cstdio>
#include <cstring>

#include "cli/commands.hpp"

namespace {

constexpr const char* usage =
    "usage: troupe <command> [flags]\n"
    "commands:\n"
    "  make-test-model --out DIR [--layers N --hidden N --heads N --kv-heads N --head-dim N\n"
    "                  --experts N --top-k N --moe-intermediate N --intermediate N --vocab N\n"
    "                  --mlp-only-layers I,J --no-norm-topk-prob --seed N --shard-mb N\n"
    "                  --tokenizer-from DIR]\n"
    "      write a random-weight qwen3_moe checkpoint in Hugging Face format\n"
    "  serve --model DIR | --config cluster.conf [--host H --port N --served-model-name NAME [ALIAS...] --api-key KEY\n"
    "        --admin-key KEY --protect-metrics --max-connections N --special-tokens-in-content\n"
    "        --max-num-seqs N --max-num-batched-tokens N --max-model-len N --kv-cache-mb N\n"
    "        --block-size N --expert-groups N --pipeline-stages N --pipeline-micro-batches N\n"
    "        --load-format dummy --device cpu|cuda\n"
    "        --gpu-memory-percent N --enforce-eager --progress-timeout-ms N --send-timeout-ms N\n"
    "        --max-pending N --warmup-requests N]\n"
    "      serve the OpenAI HTTP API (binds 127.0.0.1:8000 unless told); --warmup-requests N: N requests\n"
    "      the server sends itself once ready, /health is 503 until they finished\n"
    "  health [--url URL] [--wait S]\n"
    "      exit 0 when GET URL/health answers 200 (default http://127.0.0.1:8000); --wait S: ask every\n"
    "      0.5 s for up to S seconds (a readiness check, e.g. systemd's ExecStartPost)\n"
    "  bench [--base-url URL | --host H --port N] [--model NAME --endpoint /v1/completions|/v1/chat/completions\n"
    "        --dataset random --random-input-len N --random-output-len N --random-range-ratio R\n"
    "        --num-prompts N --max-concurrency N --request-rate R --seed N --no-ignore-eos --api-key KEY\n"
    "        --goodput ttft:MS tpot:MS e2el:MS --json FILE --timeout S --disable-progress]\n"
    "      benchmark a running OpenAI-compatible server, as `vllm bench serve` does\n"
    "  generate --model DIR --prompt-ids I,J,... [--max-tokens N --load-format dummy --device cpu|cuda]\n"
    "      greedy generation on the CPU; prints the token ids\n"
    "  cluster check FILE\n"
    "      check a cluster.conf against its model; print where each stage and expert group runs\n"
    "  cluster up FILE [--port N --warmup-requests N]\n"
    "      run the cluster FILE describes: this process is the gateway node; nodes with port 0 are started here\n"
    "  cluster status FILE [--url URL] [--api-key KEY]\n"
    "      each replica's load and each stage and expert group's node, device, health and restarts\n"
    "  node --config FILE --name NAME [--port N]\n"
    "      run node NAME of a cluster, for the head's `troupe cluster up`\n"
    "  chaos run FILE [--report PATH] [--log PATH]\n"
    "      start the cluster a chaos/drills.conf names, run its drills under load, print the report\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char* command = argv[1];
  if (!std::strcmp(command, "make-test-model")) return troupe::cli::make_test_model_command(argc - 2, argv + 2);
  if (!std::strcmp(command, "serve")) return troupe::cli::serve_command(argc - 2, argv + 2);
  if (!std::strcmp(command, "bench")) return troupe::cli::bench_command(argc - 2, argv + 2);
  if (!std::strcmp(command, "cluster")) return troupe::cli::cluster_command(argc - 2, argv + 2);
  if (!std::strcmp(command, "node")) return troupe::cli::node_command(argc - 2, argv + 2);
  if (!std::strcmp(command, "health")) return troupe::cli::health_command(argc - 2, argv + 2);
  if (!std::strcmp(command, "generate")) return troupe::cli::generate_command(argc - 2, argv + 2);
  if (!std::strcmp(command, "chaos")) return troupe::cli::chaos_command(argc - 2, argv + 2);
  std::fprintf(stderr, "troupe: unknown command \"%s\"\n%s", command, usage);
  return 2;
}
