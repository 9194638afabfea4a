#!/usr/bin/env python3
"""Make tiny random-weight Qwen3-MoE checkpoints and transformers' golden outputs.

Each case directory gets a Hugging Face checkpoint (config.json,
generation_config.json, bf16 safetensors) plus:

  golden.json  - prompt, top-5 log-probs at every prompt position, 24 greedy
                 tokens decoded with the KV cache, their top-5 and margins.
  tensors.txt  - tensor names, dtypes and shapes exactly as saved on disk.

The reference is transformers itself, run on the CPU in fp32 with eager
attention and eager experts, on the bf16-rounded weights it reloads from disk,
so the numbers are what a correct bf16-weight engine should approach.

Usage: python3 tests/golden/make_golden.py --out tests/golden/fixtures
"""

import argparse
import json
import math
import os
import shutil
import sys
import traceback

import torch

N_GREEDY = 24
TOP_K = 5

# Fields every case shares.
COMMON = dict(
    hidden_act="silu",
    rms_norm_eps=1e-6,
    max_position_embeddings=4096,
    use_sliding_window=False,
)

CASES = [
    dict(
        name="gqa_sharded",
        seed=1001,
        prompt_len=20,
        # Small shards force model.safetensors.index.json + >= 2 files.
        max_shard_size="200KB",
        rope_theta=1000000.0,
        config=dict(
            vocab_size=384, hidden_size=64, num_hidden_layers=3,
            num_attention_heads=4, num_key_value_heads=2,
            head_dim=32,  # != hidden/heads on purpose
            num_experts=8, num_experts_per_tok=2,
            moe_intermediate_size=48, intermediate_size=96,
            norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
            attention_bias=False, tie_word_embeddings=False,
        ),
    ),
    dict(
        name="dense_layer_unnormed",
        seed=2002,
        prompt_len=33,
        max_shard_size=None,  # single model.safetensors
        rope_theta=10000.0,
        config=dict(
            vocab_size=320, hidden_size=64, num_hidden_layers=3,
            num_attention_heads=4, num_key_value_heads=4, head_dim=16,
            num_experts=6, num_experts_per_tok=3,
            moe_intermediate_size=32, intermediate_size=128,
            norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[1],
            attention_bias=False, tie_word_embeddings=True,
        ),
    ),
    # Shapes the CUDA kernels take (head_dim 64 or 128, sizes multiples of 16), for the
    # GPU parity test; the CPU test runs them too. Their prompts are drawn until the
    # router has no near-tie through the prompt and clean_greedy tokens after it: a bf16
    # engine may route a near-tie the other way and then compute another function.
    dict(
        name="gpu_hd64_gqa",
        seed=4004,
        prompt_len=40,
        clean_greedy=12,
        max_shard_size=None,
        rope_theta=1000000.0,
        config=dict(
            vocab_size=512, hidden_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, head_dim=64,
            num_experts=8, num_experts_per_tok=2,
            moe_intermediate_size=64, intermediate_size=128,
            norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
            attention_bias=False, tie_word_embeddings=False,
        ),
    ),
    dict(
        name="gpu_hd128_dense_bias",
        seed=5005,
        prompt_len=20,
        clean_greedy=12,
        max_shard_size=None,
        rope_theta=10000.0,
        config=dict(
            vocab_size=384, hidden_size=128, num_hidden_layers=3,
            num_attention_heads=2, num_key_value_heads=1, head_dim=128,
            num_experts=8, num_experts_per_tok=3,
            moe_intermediate_size=48, intermediate_size=96,
            norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[1],
            attention_bias=True, tie_word_embeddings=True,
        ),
    ),
    dict(
        name="sparse_step2_mqa_bias",
        seed=3003,
        prompt_len=47,
        max_shard_size=None,
        rope_theta=10000.0,
        config=dict(
            vocab_size=256, hidden_size=48, num_hidden_layers=4,
            num_attention_heads=6, num_key_value_heads=1, head_dim=8,
            num_experts=16, num_experts_per_tok=4,
            moe_intermediate_size=24, intermediate_size=80,
            norm_topk_prob=True, decoder_sparse_step=2, mlp_only_layers=[],
            attention_bias=True, tie_word_embeddings=False,
        ),
    ),
]


def fmt(x):
    """Round to 9 significant digits so golden.json stays small but exact enough."""
    return float(f"{float(x):.9g}")


def make_config(case):
    from transformers import Qwen3MoeConfig

    c = dict(COMMON)
    c.update(case["config"])
    vocab = c["vocab_size"]
    # Special ids inside the vocab; prompts are drawn below them.
    c["bos_token_id"] = vocab - 2
    c["eos_token_id"] = vocab - 1
    theta = case["rope_theta"]
    # transformers 5 keeps rope_theta inside rope_parameters; older versions
    # took a top-level rope_theta. Try the new form first.
    rope = {"rope_parameters": {"rope_type": "default", "rope_theta": theta}}
    try:
        cfg = Qwen3MoeConfig(**c, **rope)
    except TypeError as e:
        # A strict config may refuse a field; build it bare and set fields below.
        print(f"  Qwen3MoeConfig(**fields) rejected ({e}); setting fields one by one",
              flush=True)
        cfg = Qwen3MoeConfig(**rope)
    # Some fields (head_dim) may not be declared config fields; make sure the
    # value sticks, since the model reads them with getattr.
    for k, v in c.items():
        if getattr(cfg, k, None) != v:
            print(f"  config.{k} was {getattr(cfg, k, None)!r}; setting {v!r}",
                  flush=True)
            setattr(cfg, k, v)
    return cfg


def randomize(model, cfg, seed):
    """Overwrite every parameter with seeded values that give decisive outputs.

    The default init (std 0.02) yields near-uniform logits with tiny margins.
    Second argument of N(.,.) below is the variance.
    """
    g = torch.Generator().manual_seed(seed)
    hidden = cfg.hidden_size
    notes = []

    def normal(shape, var):
        return torch.randn(shape, generator=g, dtype=torch.float32) * math.sqrt(var)

    with torch.no_grad():
        for name, p in model.named_parameters():
            shape = tuple(p.shape)
            if name.endswith("bias"):
                val = normal(shape, 0.1)
            elif "norm" in name and p.dim() == 1:
                # Non-unit norm weights so an engine that ignores them fails.
                val = 1.0 + 0.2 * torch.randn(shape, generator=g)
            elif "embed_tokens" in name:
                # Tied: this matrix is also the lm_head. At N(0, 1) the residual
                # keeps the input embedding and the model just echoes its input
                # token (a no-layer engine would pass), so use the lm_head scale.
                val = normal(shape, 9.0 / hidden if cfg.tie_word_embeddings else 1.0)
            elif name.startswith("lm_head"):
                val = normal(shape, 9.0 / hidden)
            elif name.endswith("mlp.gate.weight") or name.endswith("router.weight"):
                # Router: large logits so top-k choices are far from ties.
                val = normal(shape, 4.0 / hidden)
            elif p.dim() == 3:
                # Fused experts: gate_up_proj [E, 2I, H], down_proj [E, H, I].
                if name.endswith("down_proj"):
                    want = cfg.moe_intermediate_size
                else:
                    want = hidden
                if shape[-1] == want:
                    fan_in = shape[-1]
                else:
                    fan_in = shape[-2]
                    notes.append(f"{name}{list(shape)}: fan_in taken from dim -2")
                val = normal(shape, 1.0 / fan_in)
            elif p.dim() == 2:
                # Linear [out, in] (also per-expert Linear layers).
                val = normal(shape, 1.0 / shape[-1])
            else:
                notes.append(f"{name}{list(shape)}: unrecognised, N(0, 1)")
                val = normal(shape, 1.0)
            p.copy_(val.to(p.dtype))
        if cfg.tie_word_embeddings:
            emb = model.get_input_embeddings().weight
            head = model.get_output_embeddings().weight
            if not torch.equal(emb, head):
                notes.append("lm_head was not tied in memory; copied embeddings")
                head.copy_(emb)
    return notes


def topk_logprobs(logits_row):
    """Top-k ids and log-probs (float64 log_softmax of fp32 logits)."""
    lp = torch.log_softmax(logits_row.to(torch.float64), dim=-1)
    vals, ids = torch.topk(lp, TOP_K)
    return [int(i) for i in ids], [fmt(v) for v in vals]


def read_tensors(case_dir):
    """Names, dtypes, shapes of every tensor as stored in the safetensors files."""
    from safetensors import safe_open

    rows = []
    files = sorted(f for f in os.listdir(case_dir) if f.endswith(".safetensors"))
    for fname in files:
        with safe_open(os.path.join(case_dir, fname), framework="pt") as f:
            for key in f.keys():
                sl = f.get_slice(key)
                rows.append((key, sl.get_dtype(), list(sl.get_shape()), fname))
    rows.sort()
    return rows, files


class router_margins:
    """Per token, the smallest gap over MoE layers between the k-th and (k+1)-th router
    probability: where it is tiny, an engine in bf16 may pick another expert, and its
    outputs from that position on may differ by more than rounding."""

    def __init__(self, model, k):
        self.k = k
        self.probs = []
        for layer in model.model.layers:
            if hasattr(layer.mlp, "gate"):
                layer.mlp.gate.register_forward_hook(self.hook)

    def hook(self, module, inputs, output):
        logits = output[0] if isinstance(output, tuple) else output
        logits = logits.reshape(-1, logits.shape[-1]).double()
        sums = logits.sum(-1)
        is_probs = bool(((sums - 1).abs() < 1e-4).all()) and bool((logits >= 0).all())
        self.probs.append(logits if is_probs else torch.softmax(logits, -1))

    def clear(self):
        self.probs = []

    def take(self):
        """Per token of the last forward call, then forget it."""
        gaps = []
        for p in self.probs:
            top = torch.topk(p, min(self.k + 1, p.shape[-1]), dim=-1).values
            gaps.append(top[:, self.k - 1] - top[:, self.k] if top.shape[-1] > self.k
                        else torch.ones(p.shape[0], dtype=torch.float64))
        self.probs = []
        return [fmt(v) for v in torch.stack(gaps).min(0).values] if gaps else []


ROUTER_CLEAN = 0.005


def routes_cleanly(ref, margins_of, prompt, steps):
    """Whether the prompt and `steps` greedy tokens after it are routed with every
    router margin at or above ROUTER_CLEAN, so that a bf16 engine routes them alike."""
    with torch.no_grad():
        out = ref(input_ids=torch.tensor([prompt]), use_cache=True)
        if min(margins_of.take()) < ROUTER_CLEAN:
            return False
        past = out.past_key_values
        for _ in range(steps):
            tok = int(torch.argmax(out.logits[0, -1]))
            out = ref(input_ids=torch.tensor([[tok]]), past_key_values=past, use_cache=True)
            past = out.past_key_values
            if min(margins_of.take()) < ROUTER_CLEAN:
                return False
    return True


def layer_kinds(model):
    """Which decoder layers are MoE and which are dense, as built by transformers."""
    moe, dense = [], []
    for i, layer in enumerate(model.model.layers):
        (moe if hasattr(layer.mlp, "experts") else dense).append(i)
    return moe, dense


def run_case(case, out_root):
    import transformers
    from transformers import Qwen3MoeForCausalLM

    name = case["name"]
    case_dir = os.path.join(out_root, name)
    # Start clean so no stale shard from an earlier run survives.
    shutil.rmtree(case_dir, ignore_errors=True)
    os.makedirs(case_dir)
    print(f"== {name}", flush=True)

    torch.manual_seed(case["seed"])
    cfg = make_config(case)
    model = Qwen3MoeForCausalLM(cfg).to(torch.float32).eval()
    notes = randomize(model, cfg, case["seed"])
    for n in notes:
        print("  note:", n, flush=True)

    # Save bf16: the checkpoint the engine will load.
    model = model.to(torch.bfloat16)
    saved = {k: v.detach().float().clone() for k, v in model.state_dict().items()}
    save_kw = {}
    if case["max_shard_size"]:
        save_kw["max_shard_size"] = case["max_shard_size"]
    model.save_pretrained(case_dir, **save_kw)
    if not os.path.exists(os.path.join(case_dir, "generation_config.json")):
        # Engines read eos from here; write it if save_pretrained did not.
        from transformers import GenerationConfig
        GenerationConfig(bos_token_id=cfg.bos_token_id,
                         eos_token_id=cfg.eos_token_id).save_pretrained(case_dir)
        notes.append("generation_config.json written explicitly")
    del model

    # Reload in fp32 so the reference uses exactly the bf16-rounded weights,
    # with eager attention/experts (plain fp32 matmuls on the CPU, no TF32).
    load_kw = dict(attn_implementation="eager", device_map=None)
    try:
        ref = Qwen3MoeForCausalLM.from_pretrained(
            case_dir, dtype=torch.float32, experts_implementation="eager",
            **load_kw)
    except TypeError as e:
        print(f"  from_pretrained kwargs rejected ({e}); retrying", flush=True)
        ref = Qwen3MoeForCausalLM.from_pretrained(
            case_dir, torch_dtype=torch.float32, **load_kw)
    ref = ref.float().to("cpu").eval()
    if getattr(ref.config, "_experts_implementation", "eager") != "eager":
        # Older 5.x: no from_pretrained kwarg; the experts read the config at call time.
        if hasattr(ref, "set_experts_implementation"):
            ref.set_experts_implementation("eager")
        else:
            ref.config._experts_implementation = "eager"
    assert getattr(ref.config, "_attn_implementation", "eager") == "eager"
    experts_impl = getattr(ref.config, "_experts_implementation", None)
    attn_impl = getattr(ref.config, "_attn_implementation", None)

    # Checks: the reloaded weights are the saved bf16 values, bit for bit.
    checks = {}
    ref_sd = ref.state_dict()
    missing = sorted(set(saved) ^ set(ref_sd))
    worst = 0.0
    for k in set(saved) & set(ref_sd):
        worst = max(worst, (ref_sd[k].float() - saved[k]).abs().max().item())
    checks["reload_max_abs_diff"] = worst
    checks["reload_name_mismatch"] = missing[:10]
    assert worst == 0.0, f"reloaded weights differ from saved: {worst}"

    # Checks: rotary frequencies use our theta and head_dim.
    hd = case["config"]["head_dim"]
    want = 1.0 / (case["rope_theta"] ** (
        torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    inv = [b for n, b in ref.named_buffers() if n.endswith("inv_freq")]
    assert inv, "no inv_freq buffer found"
    checks["inv_freq_max_rel_err"] = max(
        ((b.double() - want).abs() / want).max().item() for b in inv)
    assert checks["inv_freq_max_rel_err"] < 1e-5, checks
    assert ref.model.layers[0].self_attn.q_proj.weight.shape[0] == \
        case["config"]["num_attention_heads"] * hd, "head_dim not applied"

    moe_layers, dense_layers = layer_kinds(ref)
    vocab = cfg.vocab_size
    g = torch.Generator().manual_seed(case["seed"] + 7)
    margins_of = router_margins(ref, cfg.num_experts_per_tok)
    clean = case.get("clean_greedy")
    for attempt in range(5000 if clean else 1):
        prompt = torch.randint(0, vocab - 2, (case["prompt_len"],), generator=g)
        prompt = [int(t) for t in prompt]
        if not clean or routes_cleanly(ref, margins_of, prompt, clean):
            break
    else:
        raise RuntimeError(f"{name}: no prompt routes without near-ties")
    if clean:
        notes.append(f"prompt {attempt + 1} of those drawn routes without near-ties "
                     f"(router margin >= {ROUTER_CLEAN}) through {clean} greedy tokens")
    ids = torch.tensor([prompt], dtype=torch.long)

    with torch.no_grad():
        # One forward over the whole prompt (no cache) for per-position top-5.
        full = ref(input_ids=ids, use_cache=False).logits[0].float()
        router_margin = margins_of.take()
        p_ids, p_lps = zip(*(topk_logprobs(full[i]) for i in range(len(prompt))))
        # Degeneracy guard: a model that mostly predicts its input token
        # makes a weak test (skipping every layer would still match).
        checks["prompt_top1_equals_input"] = sum(
            int(ti[0] == t) for ti, t in zip(p_ids, prompt))

        # Greedy decode with the KV cache: prefill once, then one token a step.
        out = ref(input_ids=ids, use_cache=True)
        margins_of.clear()
        past = out.past_key_values
        logits = out.logits[0, -1].float()
        checks["prefill_vs_nocache_last_max_abs_diff"] = \
            (logits - full[-1]).abs().max().item()
        greedy, g_ids, g_lps, margins, step_logits = [], [], [], [], []
        for _ in range(N_GREEDY):
            lp = torch.log_softmax(logits.double(), dim=-1)
            top2 = torch.topk(lp, 2).values
            tok = int(torch.argmax(logits))
            ti, tl = topk_logprobs(logits)
            assert ti[0] == tok
            greedy.append(tok)
            g_ids.append(ti)
            g_lps.append(tl)
            margins.append(fmt(top2[0] - top2[1]))
            step_logits.append(logits.clone())
            out = ref(input_ids=torch.tensor([[tok]]), past_key_values=past,
                      use_cache=True)
            router_margin += margins_of.take()
            past = out.past_key_values
            logits = out.logits[0, -1].float()

        # Check: the cached decode matches a no-cache forward over everything.
        seq = torch.tensor([prompt + greedy[:-1]])
        nc = ref(input_ids=seq, use_cache=False).logits[0].float()
        margins_of.clear()
        nc = nc[len(prompt) - 1:]
        diff = max((nc[i] - step_logits[i]).abs().max().item()
                   for i in range(N_GREEDY))
        checks["cache_vs_nocache_max_abs_logit_diff"] = diff
        checks["cache_vs_nocache_argmax_agree"] = bool(
            all(int(nc[i].argmax()) == greedy[i] for i in range(N_GREEDY)))

        # Check: model.generate gives the same tokens (informational only;
        # min_new_tokens would mask eos, so a greedy eos would differ).
        try:
            gen = ref.generate(
                ids, attention_mask=torch.ones_like(ids), do_sample=False,
                max_new_tokens=N_GREEDY, min_new_tokens=N_GREEDY,
                pad_token_id=cfg.eos_token_id, output_logits=True,
                return_dict_in_generate=True)
            margins_of.clear()
            gen_toks = [int(t) for t in gen.sequences[0, len(prompt):]]
            checks["generate_tokens_agree"] = gen_toks == greedy
            checks["generate_max_abs_logit_diff"] = max(
                (gen.logits[i][0].float() - step_logits[i]).abs().max().item()
                for i in range(min(len(gen.logits), N_GREEDY)))
        except Exception as e:  # keep the fixture even if generate() changes
            checks["generate_error"] = f"{type(e).__name__}: {e}"[:300]

    golden = {
        "case": name,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "attn_implementation": attn_impl,
        "experts_implementation": experts_impl,
        "moe_layers": moe_layers,
        "dense_layers": dense_layers,
        "prompt": prompt,
        "prompt_top5_ids": list(p_ids),
        "prompt_top5_logprobs": list(p_lps),
        "greedy": greedy,
        "greedy_top5_ids": g_ids,
        "greedy_top5_logprobs": g_lps,
        "greedy_margin": margins,
        # Per position of prompt + greedy tokens: the router's k-th/(k+1)-th gap.
        "router_margin": router_margin,
        "checks": {k: (fmt(v) if isinstance(v, float) else v)
                   for k, v in checks.items()},
        "notes": notes,
    }
    with open(os.path.join(case_dir, "golden.json"), "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")

    rows, files = read_tensors(case_dir)
    with open(os.path.join(case_dir, "tensors.txt"), "w") as f:
        for key, dtype, shape, fname in rows:
            f.write(f"{key}\t{dtype}\t{shape}\t{fname}\n")

    ms = sorted(margins)
    summary = {
        "case": name,
        "margin_min": ms[0],
        "margin_median": ms[len(ms) // 2],
        "distinct_greedy": len(set(greedy)),
        "files": files,
        "n_tensors": len(rows),
        "first_tensors": [r[0] for r in rows[:6]],
        "moe_layers": moe_layers,
        "dense_layers": dense_layers,
        "greedy": greedy,
        "checks": golden["checks"],
        "experts_implementation": experts_impl,
        "notes": notes,
    }
    print(json.dumps(summary, indent=1), flush=True)
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="fixtures root directory")
    ap.add_argument("--cases", nargs="*", help="subset of case names")
    args = ap.parse_args()

    # Exact fp32 reference: CPU only, and no TF32 anywhere.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_default_dtype(torch.float32)
    import transformers
    print("torch", torch.__version__, "transformers", transformers.__version__,
          flush=True)

    os.makedirs(args.out, exist_ok=True)
    failed = []
    summaries = []
    for case in CASES:
        if args.cases and case["name"] not in args.cases:
            continue
        try:
            summaries.append(run_case(case, args.out))
        except Exception:  # go on with the other cases; report at the end
            traceback.print_exc()
            failed.append(case["name"])

    print("== summary", flush=True)
    for s in summaries:
        print(f"{s['case']}: margin min {s['margin_min']:.3f} "
              f"median {s['margin_median']:.3f}; {len(s['files'])} file(s); "
              f"first tensors {s['first_tensors'][:3]}", flush=True)
    if failed:
        print("FAILED:", failed, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
