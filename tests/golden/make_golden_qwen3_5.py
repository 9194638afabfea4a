#!/usr/bin/env python3
"""Make tiny random-weight Qwen3.5-MoE checkpoints and transformers' golden outputs.

Two layouts, one case each:

  qwen3_5_moe_full_sharded   Qwen3_5MoeForConditionalGeneration (model_type qwen3_5_moe):
                             text_config + a tiny vision_config, so the weights are
                             model.language_model.* next to model.visual.*; sharded.
  qwen3_5_moe_text_tied      Qwen3_5MoeForCausalLM (model_type qwen3_5_moe_text), tied
                             embeddings, one file.

Both mix Gated DeltaNet (linear_attention) and gated full-attention layers, use partial
rotary, GQA, several linear heads with key and value head dims that differ, a shared
expert, and carry fake mtp.* tensors as real checkpoints do (transformers ignores them).

Two more in the CUDA kernels' shapes (head_dim 64 and 128, sizes multiples of 16) for
tests/model/test_gpu_parity.cpp, one of each layout: gpu_qwen3_5_hd64_sharded and
gpu_qwen3_5_hd128_tied. Their prompts are drawn, as make_golden.py's gpu_* cases are,
until the router has no near-tie through the prompt and 12 greedy tokens; their routers
are shaped so that such a draw is likely (top-1 of 8 with large logits: every MoE layer
of every position must be clear of a tie; a top-2 of 4 with small logits passed the draw
with a dozen router margins of 0.005 to 0.007, where bf16 picked other experts on the H200).

Each case directory gets the checkpoint plus golden.json (prompt, top-5 log-probs at every
prompt position, 24 greedy KV-cache decode steps with their top-5 and margins, router
margins) and tensors.txt, as tests/golden/make_golden.py writes them. The reference runs
on the CPU in fp32 with eager attention and experts and the torch fallbacks of the causal
conv1d and gated delta rule (fla and causal_conv1d are hidden from the import system).

Usage: CUDA_VISIBLE_DEVICES="" python3 tests/golden/make_golden_qwen3_5.py --out DIR
"""

import sys

# The optimised packages replace the torch reference paths when importable at the time
# transformers' modeling module is imported; hide them before anything imports it.
for _blocked in ("fla", "causal_conv1d"):
    sys.modules[_blocked] = None

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import traceback  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import (N_GREEDY, ROUTER_CLEAN, fmt, read_tensors, router_margins,  # noqa: E402
                         routes_cleanly, topk_logprobs)

LIN, FULL = "linear_attention", "full_attention"
PREFILL_CHUNK = 32  # what our parity test feeds per step; recorded as a transformers check too

CASES = [
    dict(
        name="qwen3_5_moe_full_sharded",
        kind="full",
        seed=9001,
        prompt_len=71,
        max_shard_size="300KB",
        rope=dict(rope_type="default", rope_theta=10000000.0, partial_rotary_factor=0.25,
                  mrope_section=[2, 1, 1], mrope_interleaved=True),
        text=dict(
            vocab_size=384, hidden_size=64, num_hidden_layers=4,
            layer_types=[LIN, LIN, LIN, FULL],
            num_attention_heads=4, num_key_value_heads=2, head_dim=32,
            linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=16, linear_value_head_dim=24, linear_conv_kernel_dim=4,
            num_experts=8, num_experts_per_tok=2,
            moe_intermediate_size=32, shared_expert_intermediate_size=48,
            tie_word_embeddings=False,
        ),
        vision=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                    patch_size=4, temporal_patch_size=2, spatial_merge_size=2,
                    out_hidden_size=64, num_position_embeddings=16),
    ),
    dict(
        name="qwen3_5_moe_text_tied",
        kind="text",
        seed=9002,
        prompt_len=66,
        max_shard_size=None,
        rope=dict(rope_type="default", rope_theta=1000000.0, partial_rotary_factor=0.5),
        text=dict(
            vocab_size=320, hidden_size=48, num_hidden_layers=5,
            layer_types=[LIN, FULL, LIN, LIN, FULL],
            num_attention_heads=4, num_key_value_heads=1, head_dim=16,
            linear_num_key_heads=3, linear_num_value_heads=3,
            linear_key_head_dim=8, linear_value_head_dim=12, linear_conv_kernel_dim=3,
            num_experts=16, num_experts_per_tok=4,
            moe_intermediate_size=24, shared_expert_intermediate_size=40,
            tie_word_embeddings=True,
        ),
    ),
]

CASES += [
    dict(
        name="gpu_qwen3_5_hd64_sharded",
        kind="full",
        seed=9101,
        prompt_len=34,
        clean_greedy=12,
        router_var=16.0,
        max_shard_size="600KB",
        rope=dict(rope_type="default", rope_theta=10000000.0, partial_rotary_factor=0.25,
                  mrope_section=[4, 2, 2], mrope_interleaved=True),
        text=dict(
            vocab_size=384, hidden_size=128, num_hidden_layers=4,
            layer_types=[LIN, LIN, LIN, FULL],
            num_attention_heads=4, num_key_value_heads=2, head_dim=64,
            linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=32, linear_value_head_dim=48, linear_conv_kernel_dim=4,
            num_experts=8, num_experts_per_tok=1,
            moe_intermediate_size=64, shared_expert_intermediate_size=96,
            tie_word_embeddings=False,
        ),
        vision=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                    patch_size=4, temporal_patch_size=2, spatial_merge_size=2,
                    out_hidden_size=128, num_position_embeddings=16),
    ),
    dict(
        name="gpu_qwen3_5_hd128_tied",
        kind="text",
        seed=9102,
        prompt_len=34,
        clean_greedy=12,
        router_var=16.0,
        max_shard_size=None,
        rope=dict(rope_type="default", rope_theta=1000000.0, partial_rotary_factor=0.5),
        text=dict(
            vocab_size=320, hidden_size=128, num_hidden_layers=3,
            layer_types=[LIN, FULL, LIN],
            num_attention_heads=4, num_key_value_heads=1, head_dim=128,
            linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=32, linear_value_head_dim=32, linear_conv_kernel_dim=3,
            num_experts=8, num_experts_per_tok=1,
            moe_intermediate_size=32, shared_expert_intermediate_size=48,
            tie_word_embeddings=True,
        ),
    ),
]

COMMON_TEXT = dict(hidden_act="silu", rms_norm_eps=1e-6, max_position_embeddings=4096,
                   attention_bias=False)


def special_ids(vocab):
    """Special ids at the top of the vocab; prompts are drawn below vocab - 8."""
    return dict(bos_token_id=vocab - 2, eos_token_id=vocab - 1)


def check_fields(cfg, want, where):
    """transformers may drop or rename a field it does not know: fail rather than record a
    checkpoint of another shape."""
    for k, v in want.items():
        got = getattr(cfg, k, None)
        if got != v:
            print(f"  {where}.{k} is {got!r} after construction; setting {v!r}", flush=True)
            setattr(cfg, k, v)


def make_config(case):
    from transformers import Qwen3_5MoeConfig, Qwen3_5MoeTextConfig

    text = dict(COMMON_TEXT)
    text.update(case["text"])
    text.update(special_ids(text["vocab_size"]))
    rope = dict(case["rope"])
    # partial_rotary_factor lives in rope_parameters; given also as a kwarg because the
    # config's __post_init__ defaults that kwarg to 0.25.
    text_kw = dict(text, rope_parameters=rope,
                   partial_rotary_factor=rope["partial_rotary_factor"])
    if case["kind"] == "text":
        cfg = Qwen3_5MoeTextConfig(**text_kw)
        check_fields(cfg, text, "config")
        return cfg, cfg
    vocab = text["vocab_size"]
    cfg = Qwen3_5MoeConfig(
        text_config=text_kw, vision_config=dict(case["vision"]),
        image_token_id=vocab - 3, video_token_id=vocab - 4,
        vision_start_token_id=vocab - 5, vision_end_token_id=vocab - 6,
        tie_word_embeddings=text["tie_word_embeddings"])
    check_fields(cfg.text_config, text, "text_config")
    return cfg, cfg.text_config


def model_class(case):
    from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeForConditionalGeneration
    return Qwen3_5MoeForConditionalGeneration if case["kind"] == "full" else Qwen3_5MoeForCausalLM


def text_model(model):
    inner = model.model
    return inner.language_model if hasattr(inner, "language_model") else inner


def randomize(model, tcfg, seed, router_var=4.0):
    """Overwrite every parameter with seeded values that give decisive outputs and keep
    every feature observable. Second argument of N(.,.) below is the variance; the
    router's is router_var / hidden."""
    g = torch.Generator().manual_seed(seed)
    hidden = tcfg.hidden_size
    notes = []
    # Qwen3_5MoeRMSNorm scales by (1 + weight); the gated norm of the linear layers by weight.
    zero_centred = {f"{n}.weight" for n, m in model.named_modules()
                    if type(m).__name__ == "Qwen3_5MoeRMSNorm"}
    if not zero_centred:
        raise RuntimeError("no Qwen3_5MoeRMSNorm module found: the model is not what this script expects")

    def normal(shape, var):
        return torch.randn(shape, generator=g, dtype=torch.float32) * math.sqrt(var)

    def uniform(shape, lo, hi):
        return lo + (hi - lo) * torch.rand(shape, generator=g, dtype=torch.float32)

    with torch.no_grad():
        for name, p in model.named_parameters():
            shape = tuple(p.shape)
            if ".visual." in f".{name}":
                # Never run on text; small values keep it finite.
                val = normal(shape, 0.0004)
            elif name.endswith("A_log"):
                # Per-head decay rate A: exp(g) = exp(-A softplus(a + dt_bias)) from about
                # 0.99 to 0.5 a token, so some heads remember across prefill chunks.
                val = uniform(shape, 0.02, 0.6).log()
            elif name.endswith("dt_bias"):
                val = normal(shape, 0.25)
            elif name.endswith("conv1d.weight"):
                # Depthwise [channels, 1, kernel].
                val = normal(shape, 1.0 / shape[-1])
            elif name in zero_centred:
                val = 0.2 * torch.randn(shape, generator=g)
            elif name.endswith("bias"):
                val = normal(shape, 0.1)
            elif "norm" in name and p.dim() == 1:
                val = 1.0 + 0.2 * torch.randn(shape, generator=g)
            elif "embed_tokens" in name:
                val = normal(shape, 9.0 / hidden if tcfg.tie_word_embeddings else 1.0)
            elif name.startswith("lm_head"):
                val = normal(shape, 9.0 / hidden)
            elif name.endswith("mlp.gate.weight"):
                # Router: large logits so top-k choices are far from ties.
                val = normal(shape, router_var / hidden)
            elif p.dim() == 3:
                # Fused experts: gate_up_proj [E, 2I, H], down_proj [E, H, I].
                val = normal(shape, 1.0 / shape[-1])
            elif p.dim() == 2:
                val = normal(shape, 1.0 / shape[-1])
            else:
                notes.append(f"{name}{list(shape)}: unrecognised, N(0, 1)")
                val = normal(shape, 1.0)
            p.copy_(val.to(p.dtype))
        if tcfg.tie_word_embeddings:
            emb = model.get_input_embeddings().weight
            head = model.get_output_embeddings().weight
            if not torch.equal(emb, head):
                notes.append("lm_head was not tied in memory; copied embeddings")
                head.copy_(emb)
    return notes


def mtp_tensors(tcfg, g):
    """A few tensors in the layout of a real checkpoint's multi-token-prediction head
    (top-level mtp.*): an engine must skip them, transformers ignores them."""
    h, hd = tcfg.hidden_size, tcfg.head_dim
    q = tcfg.num_attention_heads * hd
    kv = tcfg.num_key_value_heads * hd
    shapes = {
        "mtp.fc.weight": [h, 2 * h],
        "mtp.pre_fc_norm_embedding.weight": [h],
        "mtp.pre_fc_norm_hidden.weight": [h],
        "mtp.norm.weight": [h],
        "mtp.layers.0.input_layernorm.weight": [h],
        "mtp.layers.0.post_attention_layernorm.weight": [h],
        "mtp.layers.0.self_attn.q_proj.weight": [2 * q, h],
        "mtp.layers.0.self_attn.k_proj.weight": [kv, h],
        "mtp.layers.0.self_attn.v_proj.weight": [kv, h],
        "mtp.layers.0.self_attn.o_proj.weight": [h, q],
        "mtp.layers.0.self_attn.q_norm.weight": [hd],
        "mtp.layers.0.self_attn.k_norm.weight": [hd],
        "mtp.layers.0.mlp.gate.weight": [tcfg.num_experts, h],
        "mtp.layers.0.mlp.shared_expert_gate.weight": [1, h],
    }
    return {k: (0.1 * torch.randn(s, generator=g)).to(torch.bfloat16) for k, s in shapes.items()}


def add_mtp(case_dir, tensors):
    """Append the mtp tensors to the (last) safetensors file, updating the index."""
    from safetensors.torch import load_file, save_file

    index_path = os.path.join(case_dir, "model.safetensors.index.json")
    if os.path.exists(index_path):
        with open(index_path) as f:
            index = json.load(f)
        target = sorted(set(index["weight_map"].values()))[-1]
    else:
        index, target = None, "model.safetensors"
    path = os.path.join(case_dir, target)
    stored = load_file(path)
    clash = set(stored) & set(tensors)
    if clash:
        raise RuntimeError(f"transformers already saved {sorted(clash)}")
    stored.update(tensors)
    save_file(stored, path, metadata={"format": "pt"})
    if index is not None:
        for k, t in tensors.items():
            index["weight_map"][k] = target
        meta = index.setdefault("metadata", {})
        if "total_size" in meta:
            meta["total_size"] += sum(t.numel() * t.element_size() for t in tensors.values())
        with open(index_path, "w") as f:
            json.dump(index, f, indent=2, sort_keys=True)
            f.write("\n")
    return target


def closure_value(fn, var):
    """The value of free variable `var` in fn or what it wraps, or None."""
    seen = 0
    while fn is not None and seen < 8:
        code = getattr(fn, "__code__", None)
        cells = getattr(fn, "__closure__", None)
        if code is not None and cells:
            free = dict(zip(code.co_freevars, cells))
            if var in free:
                return free[var].cell_contents
        fn = getattr(fn, "__wrapped__", None)
        seen += 1
    return None


def kernel_paths():
    """Which implementation each linear-attention op resolved to: the torch fallback
    (is_new_implementation False) is required."""
    import transformers.models.qwen3_5_moe.modeling_qwen3_5_moe as mod

    paths = {}
    for name in ("causal_conv1d_fn", "causal_conv1d_update",
                 "torch_chunk_gated_delta_rule", "torch_recurrent_gated_delta_rule"):
        fn = getattr(mod, name, None)
        if fn is None:
            paths[name] = "absent"
            continue
        is_new = closure_value(fn, "is_new_implementation")
        if is_new:
            impl = closure_value(fn, "implementation")
            raise RuntimeError(f"{name} resolved to {getattr(impl, '__module__', impl)}, not the torch fallback")
        paths[name] = "torch fallback" if is_new is False else "plain torch function"
    return paths


class text_router_margins(router_margins):
    """make_golden's router margins, hooked on the text model's layers."""

    def __init__(self, layers, k):
        self.k = k
        self.probs = []
        hooked = 0
        for layer in layers:
            if hasattr(layer.mlp, "gate"):
                layer.mlp.gate.register_forward_hook(self.hook)
                hooked += 1
        if hooked != len(layers):
            raise RuntimeError(f"router hooks on {hooked} of {len(layers)} layers")


def load_reference(case, case_dir):
    """The saved checkpoint reloaded in fp32 with eager attention and experts."""
    cls = model_class(case)
    load_kw = dict(attn_implementation="eager", device_map=None)
    try:
        ref = cls.from_pretrained(case_dir, dtype=torch.float32,
                                  experts_implementation="eager", **load_kw)
    except TypeError as e:
        print(f"  from_pretrained kwargs rejected ({e}); retrying", flush=True)
        ref = cls.from_pretrained(case_dir, torch_dtype=torch.float32, **load_kw)
    ref = ref.float().to("cpu").eval()
    if getattr(ref.config, "_experts_implementation", "eager") != "eager":
        if hasattr(ref, "set_experts_implementation"):
            ref.set_experts_implementation("eager")
        else:
            ref.config._experts_implementation = "eager"
    tcfg = ref.config.get_text_config()
    for c in (ref.config, tcfg):
        impl = getattr(c, "_attn_implementation", "eager")
        assert impl == "eager", f"attention implementation is {impl}"
    return ref


def run_case(case, out_root):
    import transformers
    from transformers import GenerationConfig

    name = case["name"]
    case_dir = os.path.join(out_root, name)
    shutil.rmtree(case_dir, ignore_errors=True)
    os.makedirs(case_dir)
    print(f"== {name}", flush=True)

    torch.manual_seed(case["seed"])
    cfg, tcfg = make_config(case)
    model = model_class(case)(cfg).to(torch.float32).eval()
    notes = randomize(model, tcfg, case["seed"], case.get("router_var", 4.0))
    for n in notes:
        print("  note:", n, flush=True)

    # Save bf16: the checkpoint the engine will load.
    model = model.to(torch.bfloat16)
    saved = {k: v.detach().float().clone() for k, v in model.state_dict().items()}
    save_kw = {"max_shard_size": case["max_shard_size"]} if case["max_shard_size"] else {}
    model.save_pretrained(case_dir, **save_kw)
    del model
    gen_path = os.path.join(case_dir, "generation_config.json")
    gen = json.load(open(gen_path)) if os.path.exists(gen_path) else {}
    if gen.get("eos_token_id") is None:
        # Engines read eos from here; write it if save_pretrained did not.
        GenerationConfig(bos_token_id=tcfg.bos_token_id,
                         eos_token_id=tcfg.eos_token_id).save_pretrained(case_dir)
        notes.append("generation_config.json written explicitly")
    mtp_file = add_mtp(case_dir, mtp_tensors(tcfg, torch.Generator().manual_seed(case["seed"] + 3)))
    notes.append(f"mtp.* tensors (not used by transformers) appended to {mtp_file}")

    ref = load_reference(case, case_dir)
    rcfg = ref.config.get_text_config()
    checks = {"kernel_paths": kernel_paths()}

    # Checks: the reloaded weights are the saved bf16 values, bit for bit.
    ref_sd = ref.state_dict()
    mismatch = sorted(set(saved) ^ set(ref_sd))
    worst = 0.0
    for k in set(saved) & set(ref_sd):
        worst = max(worst, (ref_sd[k].float() - saved[k]).abs().max().item())
    checks["reload_max_abs_diff"] = worst
    checks["reload_name_mismatch"] = mismatch[:10]
    assert not mismatch, f"reloaded names differ from saved: {mismatch[:10]}"
    assert worst == 0.0, f"reloaded weights differ from saved: {worst}"

    # Checks: the config is the one asked for, and partial rotary uses our theta and dim.
    for k, v in case["text"].items():
        assert getattr(rcfg, k) == v, f"reloaded config.{k} = {getattr(rcfg, k)!r}, wanted {v!r}"
    rope = case["rope"]
    hd = case["text"]["head_dim"]
    rot = int(hd * rope["partial_rotary_factor"])
    want = 1.0 / (rope["rope_theta"] ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot))
    inv = [b for n, b in ref.named_buffers() if n.endswith("inv_freq") and "visual" not in n]
    assert inv, "no inv_freq buffer found"
    for b in inv:
        assert b.numel() == want.numel(), f"inv_freq has {b.numel()} entries, wanted {want.numel()}"
    checks["inv_freq_max_rel_err"] = max(((b.double() - want).abs() / want).max().item() for b in inv)
    assert checks["inv_freq_max_rel_err"] < 1e-5, checks

    layers = text_model(ref).layers
    layer_types = list(rcfg.layer_types)
    assert layer_types == case["text"]["layer_types"], layer_types
    for i, (layer, kind) in enumerate(zip(layers, layer_types)):
        assert hasattr(layer, "linear_attn" if kind == LIN else "self_attn"), f"layer {i} is not {kind}"
        assert hasattr(layer.mlp, "shared_expert") and hasattr(layer.mlp, "experts"), f"layer {i} mlp"
    full_at = layer_types.index(FULL)
    assert layers[full_at].self_attn.q_proj.weight.shape[0] == \
        2 * case["text"]["num_attention_heads"] * hd, "q_proj does not carry the output gate"

    vocab = rcfg.vocab_size
    g = torch.Generator().manual_seed(case["seed"] + 7)
    margins_of = text_router_margins(layers, rcfg.num_experts_per_tok)
    clean = case.get("clean_greedy")
    for attempt in range(20000 if clean else 1):
        prompt = [int(t) for t in torch.randint(0, vocab - 8, (case["prompt_len"],), generator=g)]
        if not clean or routes_cleanly(ref, margins_of, prompt, clean):
            break
    else:
        raise RuntimeError(f"{name}: no prompt routes without near-ties")
    margins_of.clear()
    if clean:
        notes.append(f"prompt {attempt + 1} of those drawn routes without near-ties "
                     f"(router margin >= {ROUTER_CLEAN}) through {clean} greedy tokens")
    ids = torch.tensor([prompt], dtype=torch.long)

    with torch.no_grad():
        # One forward over the whole prompt (no cache) for per-position top-5.
        full = ref(input_ids=ids, use_cache=False).logits[0].float()
        router_margin = margins_of.take()
        assert len(router_margin) == len(prompt), (len(router_margin), len(prompt))
        p_ids, p_lps = zip(*(topk_logprobs(full[i]) for i in range(len(prompt))))
        checks["prompt_top1_equals_input"] = sum(int(ti[0] == t) for ti, t in zip(p_ids, prompt))

        # The prompt in PREFILL_CHUNK-token pieces through the cache, as our test feeds it:
        # transformers' conv and recurrent state carried between calls.
        past, pieces = None, []
        for s in range(0, len(prompt), PREFILL_CHUNK):
            out = ref(input_ids=ids[:, s:s + PREFILL_CHUNK], past_key_values=past, use_cache=True)
            past = out.past_key_values
            pieces.append(out.logits[0].float())
        margins_of.clear()
        chunked = torch.cat(pieces)
        checks["chunked_prefill_vs_nocache_max_abs_diff"] = (chunked - full).abs().max().item()
        assert checks["chunked_prefill_vs_nocache_max_abs_diff"] < 1e-3, checks

        # Greedy decode with the cache: prefill once, then one token a step.
        out = ref(input_ids=ids, use_cache=True)
        margins_of.clear()
        past = out.past_key_values
        logits = out.logits[0, -1].float()
        checks["prefill_vs_nocache_last_max_abs_diff"] = (logits - full[-1]).abs().max().item()
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
            out = ref(input_ids=torch.tensor([[tok]]), past_key_values=past, use_cache=True)
            router_margin += margins_of.take()
            past = out.past_key_values
            logits = out.logits[0, -1].float()

        # Check: the cached decode (recurrent delta rule, conv update) matches a no-cache
        # forward (chunked delta rule) over everything.
        seq = torch.tensor([prompt + greedy[:-1]])
        nc = ref(input_ids=seq, use_cache=False).logits[0].float()
        margins_of.clear()
        nc = nc[len(prompt) - 1:]
        diff = max((nc[i] - step_logits[i]).abs().max().item() for i in range(N_GREEDY))
        checks["cache_vs_nocache_max_abs_logit_diff"] = diff
        checks["cache_vs_nocache_argmax_agree"] = bool(
            all(int(nc[i].argmax()) == greedy[i] for i in range(N_GREEDY)))
        assert diff < 1e-3, f"cached decode differs from a no-cache forward by {diff}"

        try:
            gen = ref.generate(
                ids, attention_mask=torch.ones_like(ids), do_sample=False,
                max_new_tokens=N_GREEDY, min_new_tokens=N_GREEDY,
                pad_token_id=rcfg.eos_token_id, output_logits=True,
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
        "architecture": type(ref).__name__,
        "attn_implementation": getattr(rcfg, "_attn_implementation", None),
        "experts_implementation": getattr(ref.config, "_experts_implementation", None),
        "layer_types": layer_types,
        "moe_layers": list(range(len(layers))),
        "dense_layers": [],
        "prompt": prompt,
        "prefill_chunk": PREFILL_CHUNK,
        "prompt_top5_ids": list(p_ids),
        "prompt_top5_logprobs": list(p_lps),
        "greedy": greedy,
        "greedy_top5_ids": g_ids,
        "greedy_top5_logprobs": g_lps,
        "greedy_margin": margins,
        # Per position of prompt + greedy tokens: the router's k-th/(k+1)-th gap.
        "router_margin": router_margin,
        "checks": {k: (fmt(v) if isinstance(v, float) else v) for k, v in checks.items()},
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
        "architecture": golden["architecture"],
        "margin_min": ms[0],
        "margin_median": ms[len(ms) // 2],
        "router_margin_min": min(router_margin),
        "distinct_greedy": len(set(greedy)),
        "files": files,
        "n_tensors": len(rows),
        "first_tensors": [r[0] for r in rows[:6]],
        "layer_types": layer_types,
        "greedy": greedy,
        "checks": golden["checks"],
        "notes": notes,
    }
    print(json.dumps(summary, indent=1), flush=True)
    print("  tensors:", flush=True)
    for key, dtype, shape, fname in rows:
        if ".visual." not in f".{key}" and (".layers.0." in key or ".layers.3." in key
                                              or "layers" not in key or key.startswith("mtp")):
            print(f"    {key} {dtype} {shape} {fname}", flush=True)
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="fixtures root directory")
    ap.add_argument("--cases", nargs="*", help="subset of case names")
    args = ap.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_default_dtype(torch.float32)
    import transformers
    print("torch", torch.__version__, "transformers", transformers.__version__, flush=True)

    os.makedirs(args.out, exist_ok=True)
    failed, summaries = [], []
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
        print(f"{s['case']} ({s['architecture']}): margin min {s['margin_min']:.3f} "
              f"median {s['margin_median']:.3f}; router margin min {s['router_margin_min']:.2e}; "
              f"{len(s['files'])} file(s), {s['n_tensors']} tensors", flush=True)
    if failed:
        print("FAILED:", failed, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
