"""Peak memory and time of the policy loss's forward + backward, LM head chunked vs not.

    python benchmarks/logits_chunk.py [--vocab 131072] [--hidden 64] [--rows 2]
                                      [--completion 1024] [--chunks 0,512,128]

A one-layer random Llama with a big vocabulary (the head's logits dominate everything else),
B rows of a 32-token prompt plus a C-token completion, every completion token trained, at
T = 0.7: ``policy_loss`` forward + backward with ``logits_chunk_tokens`` = each of --chunks
(0 = off, the baseline, measured in the same run). Each setting runs in its own fresh
process: peak memory is the step's (CUDA: ``max_memory_allocated``; CPU: peak RSS minus the
RSS before the step, ``ru_maxrss``, glibc hands big freed blocks back to the OS), time the
median of 3 steps after one warm-up. Printed: one line per setting with the ratios against
chunk 0, and the entropy estimate (mean -log p of the trained tokens) as a check that
every setting computed the same log-probs.

Measured (`--chunks 0,2048,512,128`: the 2-core CPU VM, load ~0.8, fp32, vocab 131,072,
hidden 64, 2 rows x 1,024 trained tokens; one fp32 (B, C, V) logits = 1,024 MiB; one run
each, times noisy; the same table is in docs/gpu.md):
    chunk     0: peak 3072 MiB (1.00x), step 5.58 s (1.00x)
    chunk  2048: peak 4096 MiB (1.33x), step 3.32 s (0.60x)
    chunk   512: peak 1057 MiB (0.34x), step 5.24 s (0.94x)
    chunk   128: peak  291 MiB (0.09x), step 5.45 s (0.98x)
    entropy 11.803814 in every row
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def child(args: argparse.Namespace, chunk: int) -> dict:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from trainers.core.batch import Region, Row, collate
    from trainers.core.loss import LossConfig, policy_loss

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        intermediate_size=2 * args.hidden,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32 + args.completion + 8,
    )
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    model = LlamaForCausalLM(cfg).float().to(device)
    gen = torch.Generator().manual_seed(1)
    rows = [
        Row.prompt_completion(
            torch.randint(4, args.vocab, (32,), generator=gen).tolist(),
            torch.randint(4, args.vocab, (args.completion,), generator=gen).tolist(),
            Region.RESPONSE,
            1.0 if i % 2 else -1.0,
        )
        for i in range(args.rows)
    ]
    batch = collate(rows, 0)
    batch = batch.replace(
        **{
            k: getattr(batch, k).to(device)
            for k in ("input_ids", "attention_mask", "region", "advantages")
        }
    )
    loss_cfg = LossConfig(beta=0.0, temperature=0.7, logits_chunk_tokens=chunk)

    def step() -> tuple[float, float]:
        start = time.perf_counter()
        loss, diag = policy_loss(model, batch, loss_cfg)
        loss.backward()
        if cuda:
            torch.cuda.synchronize()
        model.zero_grad(set_to_none=False)  # gradients stay allocated: not part of the peak
        return time.perf_counter() - start, diag.entropy

    # the gradient buffers exist before the measured step, as in training
    step()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    else:
        before = _rss()
    seconds, entropy = step()
    if cuda:
        peak = torch.cuda.max_memory_allocated() - before
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    times = [seconds] + [step()[0] for _ in range(2)]
    return {
        "chunk": chunk,
        "peak_bytes": peak,
        "seconds": statistics.median(times),
        "entropy": entropy,
        "device": str(device),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vocab", type=int, default=131072)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--rows", type=int, default=2)
    p.add_argument("--completion", type=int, default=1024)
    p.add_argument("--chunks", default="0,512,128")
    p.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child is not None:
        print(json.dumps(child(args, args.child)))
        return
    chunks = [int(c) for c in args.chunks.split(",")]
    if chunks[0] != 0:
        chunks = [0, *chunks]  # the baseline, in the same run
    results = []
    for c in chunks:
        cmd = [sys.executable, __file__, "--child", str(c)]
        cmd += ["--vocab", str(args.vocab), "--hidden", str(args.hidden)]
        cmd += ["--rows", str(args.rows), "--completion", str(args.completion)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
    base = results[0]
    logits = args.rows * args.completion * args.vocab * 4
    print(
        f"vocab {args.vocab}, hidden {args.hidden}, {args.rows} rows x {args.completion} "
        f"trained tokens, device {base['device']}; one fp32 (B, C, V) logits = "
        f"{logits / 2**20:.0f} MiB"
    )
    for r in results:
        print(
            f"chunk {r['chunk']:>5}: peak {max(0, r['peak_bytes']) / 2**20:8.0f} MiB "
            f"({ratio(r['peak_bytes'], base['peak_bytes'])}), step {r['seconds']:.2f} s "
            f"({ratio(r['seconds'], base['seconds'])}), entropy {r['entropy']:.6f} "
            f"(chunk 0: {base['entropy']:.6f})"
        )


def ratio(value: float, baseline: float) -> str:
    """value / baseline, or why there is none: a step small enough that the process's peak
    RSS never rose (ru_maxrss counts pages, and the earlier peak can cover the step) has no
    measured peak, and a 0 baseline no ratio."""
    if baseline <= 0 or value < 0:
        return "no ratio: below what the peak counter resolves"
    return f"{value / baseline:.2f}x"


if __name__ == "__main__":
    main()
