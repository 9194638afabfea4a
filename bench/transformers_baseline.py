#!/usr/bin/env python3
"""transformers' own speed on a model shape with random weights, on the GPU machine: the
side-by-side reference for troupe's GPU benchmark (issue 5).

Usage: python3 bench/transformers_baseline.py --config bench/configs/qwen3-30b-a3b/config.json
Prints batch-1 decode tokens/s (greedy generate, KV cache) and prefill tokens/s.
"""

import argparse
import json
import statistics
import time

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM


def timed(fn):
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start, out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--decode", type=int, default=64)
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--prefill", type=int, default=4096)
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()

    with open(a.config) as f:
        fields = json.load(f)
    config = AutoConfig.for_model(**fields)
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    # Built on the GPU: random init of 30B parameters on the host takes many minutes.
    with torch.device("cuda"):
        load_s, model = timed(lambda: AutoModelForCausalLM.from_config(config).eval())
    params = sum(t.numel() for t in model.parameters())
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{config.model_type}: {params / 1e9:.1f}B parameters, built with random weights in {load_s:.0f} s")

    vocab = config.vocab_size
    prompt = torch.randint(0, vocab, (1, a.prompt), device="cuda")
    generate = lambda n: model.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                                        eos_token_id=None, pad_token_id=0)
    with torch.no_grad():
        generate(4)  # warm-up: kernels, allocator
        decode = []
        for _ in range(a.runs):
            t_one, _ = timed(lambda: generate(1))
            t_all, _ = timed(lambda: generate(a.decode + 1))
            decode.append(a.decode / (t_all - t_one))  # prefill and first token cancel out
        long_prompt = torch.randint(0, vocab, (1, a.prefill), device="cuda")
        model(long_prompt[:, :256])
        prefill = [a.prefill / timed(lambda: model(long_prompt))[0] for _ in range(a.runs)]
    print(f"batch-1 decode: {statistics.median(decode):.1f} tok/s (median of {a.runs}; {a.decode} tokens after a {a.prompt}-token prompt)")
    print(f"prefill {a.prefill} tokens: {statistics.median(prefill):.0f} tok/s (median of {a.runs})")


if __name__ == "__main__":
    main()
