"""A toy verifiable task for the training-engine tests, and a script to run it.

Task: the prompt is a few filler words around one digit d ("please now 7 say"); the program
``print(d)`` passes the problem's single test (expected output "d"), anything else fails. The
policy is a tiny random Llama over a 34-word vocabulary in which each ``print(d)`` is one
token, so a random policy passes ~1/34 of the time and learning to copy the digit is a real,
verifier-scored skill. Held-out prompts are fresh filler sequences the trainer never saw.

Run as a script (torchrun / subprocess) to train: ``python tests/helpers/toy_task.py OUT [options]``.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from cppo_bench.problem import Problem, Test  # noqa: E402

DIGITS = "0123456789"
FILLER = ["say", "please", "now", "the", "digit", "number", "show", "me", "quickly", "output"]
SPECIAL = ["<pad>", "<eos>", "<unk>"]
PROGRAMS = [f"print({d})" for d in DIGITS] + ["pass"]


def toy_tokenizer() -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate([*SPECIAL, *FILLER, *DIGITS, *PROGRAMS])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )


def toy_model_dir(dest: Path, seed: int = 0, **sizes: int) -> Path:
    """A tiny random Llama over the toy vocabulary; ``sizes`` override its LlamaConfig
    (hidden_size, num_hidden_layers, ...: a wider one for memory measurements). They go to
    the constructor, so what it derives from them (head_dim = hidden / heads) follows."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    if (dest / "config.json").is_file():
        return dest
    tok = toy_tokenizer()
    torch.manual_seed(seed)
    shape = {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 64,
    }
    cfg = LlamaConfig(
        vocab_size=len(tok),
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.eos_token_id,
        **{**shape, **sizes},
    )
    LlamaForCausalLM(cfg).save_pretrained(dest, safe_serialization=True)
    tok.save_pretrained(dest)
    return dest


def toy_problems(n: int, seed: int, split: str) -> list[Problem]:
    rng = random.Random(f"{split}:{seed}")
    out, seen = [], set()
    while len(out) < n:
        d = DIGITS[len(out) % 10]
        words = rng.sample(FILLER, rng.randint(2, 4))
        words.insert(rng.randint(0, len(words)), d)
        statement = " ".join(words)
        if statement in seen:
            continue
        seen.add(statement)
        out.append(
            Problem(
                benchmark="toy",
                problem_id=f"{split}-{len(out)}",
                statement=statement,
                tests=(Test(input="", output=f"{d}\n"),),
                checker="lcb",
                time_limit_s=2.0,
            )
        )
    return out


def toy_prompt(problem: Problem) -> tuple[dict[str, str], ...]:
    return ({"role": "user", "content": problem.statement},)


def heldout_reward(
    model_dir: Path,
    problems: list[Problem],
    samples: int,
    seed: int = 123,
    temperature: float = 1.0,
) -> float:
    """Mean verifier reward of ``samples`` sampled programs per held-out prompt."""
    import torch

    from cppo_bench.backends.base import GenRequest, SamplingParams
    from cppo_bench.backends.hf import HFBackend, load_model
    from cppo_bench.verifier import VerifyJob, verify_batch

    model, tok, mid = load_model(str(model_dir), dtype=torch.float32)
    backend = HFBackend(model, tok, mid, device="cpu", batch_size=64)
    reqs, owners = [], []
    for p in problems:
        for i in range(samples):
            params = SamplingParams(
                temperature=temperature, top_p=1.0, max_tokens=1, seed=seed * 100003 + i
            )
            reqs.append(GenRequest(params=params, messages=toy_prompt(p)))
            owners.append(p)
    results = backend.generate(reqs)
    verdicts = verify_batch(
        [VerifyJob(p, r.text) for p, r in zip(owners, results, strict=True)], workers=2
    )
    return sum(v.passed for v in verdicts) / len(verdicts)


def _parity_reward(rollouts: Any) -> Any:
    """A deterministic stand-in reward (even first token = 1) that gives every group contrast."""
    from trainers.engine.rewards import Scored

    return [
        Scored(r, float(r.completion_ids[0] % 2 == 0), r.completion_ids[0] % 2 == 0, "")
        for r in rollouts
    ]


def run(
    out: Path,
    model_dir: Path,
    *,
    algo: str = "pkpo",
    steps: int = 2,
    seed: int = 0,
    resume: bool = False,
    kill_after: int = 0,
    problems: int = 16,
    parity_reward: bool = False,
    gate: Any = None,
    **overrides: Any,
) -> Any:
    """Train on the toy task through the real engine (rollouts, verifier, update). ``gate``:
    CPPO's reward-model gate (problems, tuples) -> p(valid), for ``algo="cppo"``."""
    from trainers.engine.algorithm import ALGORITHMS
    from trainers.engine.config import build_flat
    from trainers.engine.data import TrainingSet
    from trainers.engine.loop import RunSpec, train

    cls = ALGORITHMS.get(algo)
    layer = {
        "max_steps": steps,
        "prompts_per_step": 4,
        "max_tokens": 1,
        "temperature": 1.0,
        "lr": 3e-3,
        "micro_batch_rows": 8,
        "rollout_batch": 64,
        "verify_workers": 1,
        "reference_dtype": "float32",
        "save_every": steps,
        "state_every": 1,
    }
    if algo in ("pkpo", "passk_rl"):
        layer["n"] = 8
    layer.update(overrides)
    engine_cfg, algo_cfg = build_flat(cls.Config, layer)
    training = TrainingSet(toy_problems(problems, 0, "train"), "toy")

    def on_step(done: int, metrics: dict) -> None:
        if kill_after and done == kill_after:
            # the next step starts and is killed while in flight (during its rollouts)
            os.environ["TOY_KILL_NEXT"] = "1"

    algorithm = cls(algo_cfg)
    if gate is not None:
        algorithm.gate = gate
    spec = RunSpec(
        algorithm=algorithm,
        config=engine_cfg,
        training=training,
        out_dir=out,
        model=str(model_dir),
        seed=seed,
        resume=resume,
        progress=False,
        prompt=toy_prompt,
        stop=(),
        on_step=on_step,
    )
    if parity_reward:
        spec.reward = _parity_reward
    if kill_after:
        from trainers.engine.rewards import REWARDS

        inner = spec.reward or REWARDS.get("pass")(1)

        def reward(rollouts: Any) -> Any:
            if os.environ.get("TOY_KILL_NEXT"):
                os.kill(os.getpid(), signal.SIGKILL)
            return inner(rollouts)

        spec.reward = reward
    return train(spec)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--algo", default="pkpo")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--kill-after", type=int, default=0)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--parity-reward", action="store_true")
    # OUT/r{RANK}: each process its own folder, as on nodes without a shared file system
    ap.add_argument("--rank-out", action="store_true")
    args = ap.parse_args()
    if args.rank_out:
        args.out = args.out / f"r{os.environ.get('RANK', '0')}"
    import yaml

    extra = {k: yaml.safe_load(v) for k, _, v in (s.partition("=") for s in args.set)}
    run(
        args.out,
        args.model,
        algo=args.algo,
        steps=args.steps,
        resume=args.resume,
        kill_after=args.kill_after,
        parity_reward=args.parity_reward,
        **extra,
    )


if __name__ == "__main__":
    main()
