"""Per-step diagnostics: the study's panel, reduced over processes, one JSON line per step.

``metrics.jsonl`` (main process only) has one object per optimizer step:

    step, epoch, lr                       schedule
    grad_norm                             gradient L2 norm before clipping
    param_step_norm                       ||theta_after - theta_before||_2
    adv_nonzero_rate                      share of rows with a non-zero advantage
    group_live_rate                       share of rows whose problem group still has gradient
    transformed_reward_mean / _var        PKPO / pass@k advantages (the transformed rewards)
    r_correct_mean, r_mi_mean, combined_reward_mean / _var     UpSkill
    reward_mean / _var                    verifier reward of every rollout
    kl, clip_fraction, entropy, ratio_mean, loss               from the policy loss
    response_len                          mean completion tokens per rollout
    overlong_prompts                      rollouts not decoded: the prompt fills the context
                                          (empty completion, reward 0, nothing trained)
    time_rollout, time_verify, time_advantage, time_update, time_step   seconds
    time_reference                        the reference's log-probs (part of time_update)
    tokens_per_s                          completion tokens generated per rollout second
    update_tokens_per_s                   trained-on (prompt + completion) tokens per update second

A value is a mean over the global batch (all processes); ``*_var`` the population variance.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from trainers.harness import METRICS

METRICS_FILE = METRICS  # the one name (cppo_bench.store.training_schema)
VARIANCE_OF = ("reward", "transformed_reward", "combined_reward", "r_mi", "r_correct")


class Timer:
    def __init__(self) -> None:
        self.spent: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.spent[name] = self.spent.get(name, 0.0) + time.perf_counter() - start


def reduce_values(values: Mapping[str, Sequence[float]], all_reduce_sum: Any) -> dict[str, float]:
    """Global mean (and variance for ``VARIANCE_OF``) of per-row values over every process.
    ``all_reduce_sum(tensor) -> tensor`` sums over processes (identity on one process)."""
    keys = sorted(values)
    if not keys:
        return {}
    stats = torch.tensor(
        [
            [float(sum(values[k])), float(sum(v * v for v in values[k])), float(len(values[k]))]
            for k in keys
        ],
        dtype=torch.float64,
    )
    stats = all_reduce_sum(stats)
    out: dict[str, float] = {}
    for k, (s, sq, n) in zip(keys, stats.tolist(), strict=True):
        if n == 0:
            continue
        mean = s / n
        name = {"adv_nonzero": "adv_nonzero_rate", "group_live": "group_live_rate"}.get(k)
        out[name or f"{k}_mean"] = mean
        if k in VARIANCE_OF:
            out[f"{k}_var"] = max(sq / n - mean * mean, 0.0)
    return out


class ParamSnapshot:
    """The trainable parameters before a step, to measure ||delta theta|| after it.

    The copy is of this process's part of each parameter (its shard under FSDP2 / ZeRO-3),
    kept in host memory: no second copy of the weights on the accelerator. It is the one
    copy of the policy to the host a step makes: the norm streams the snapshot back to where
    each parameter lives, a chunk at a time (it used to copy the whole fp32 policy to the
    host a second time). Squared norms of shards are summed over processes; replicated
    parameters (DDP, ZeRO-1/2) are counted once.
    """

    def __init__(self, params: Sequence[torch.Tensor]) -> None:
        from trainers.engine.sharding import local

        self.params = list(params)
        # local() of the parameter itself: detach() would drop ZeRO-3's ds_tensor attribute
        # and leave the empty placeholder (or a persistent parameter's full copy)
        self.before = [local(p)[0].detach().to("cpu", copy=True) for p in self.params]

    def step_norm(self, all_reduce_sum: Any | None = None) -> float:
        """||theta_after - theta_before||_2 over every process; a collective when
        ``all_reduce_sum`` is given (every process calls it)."""
        from trainers.engine.sharding import local

        sq = torch.zeros(2, dtype=torch.float64)  # [sharded parts, replicated parameters]
        for p, b in zip(self.params, self.before, strict=True):
            now, split = local(p)
            sq[0 if split else 1] += _squared_distance(now.detach(), b)
        if all_reduce_sum is not None:
            sharded = all_reduce_sum(sq[:1].clone())
            sq = torch.cat([sharded.reshape(1), sq[1:]])
        return float(sq.sum().sqrt())


# elements per chunk of ``_squared_distance``: one fp64 chunk (128 MiB) and the snapshot's
# chunk (64 MiB) beside the parameter at most
STEP_NORM_CHUNK = 1 << 24


def _squared_distance(now: torch.Tensor, before: torch.Tensor) -> torch.Tensor:
    """sum((now - before)^2) in fp64 (a host scalar), computed where ``now`` lives: the host
    snapshot ``before`` goes there a chunk at a time and the difference is widened a chunk at
    a time, so neither a second host copy of the parameter nor a full fp64 copy on the
    accelerator (5.1 GB for Qwen3.5-4B's tied embedding) ever exists."""
    flat_now = now.reshape(-1)
    flat_before = before.reshape(-1)
    total = torch.zeros((), dtype=torch.float64, device=now.device)
    for start in range(0, flat_now.numel(), STEP_NORM_CHUNK):
        ref = flat_before[start : start + STEP_NORM_CHUNK].to(now.device, non_blocking=True)
        # a copy even when the parameter is fp64 already: sub_ must never write into it
        diff = flat_now[start : start + STEP_NORM_CHUNK].to(torch.float64, copy=True)
        total += diff.sub_(ref).square_().sum()
    return total.cpu()


class MetricsLog:
    """Append-only JSON Lines, flushed and fsynced per step so a killed run keeps its lines."""

    def __init__(self, out_dir: Path, enabled: bool) -> None:
        self.path = Path(out_dir) / METRICS_FILE
        self.enabled = enabled

    def truncate_after(self, step: int) -> None:
        """Drop lines past ``step`` (a resumed run recomputes them)."""
        if not self.enabled or not self.path.is_file():
            return
        from trainers.engine.artifacts import atomic_write_text
        from trainers.harness import read_jsonl

        kept = [
            json.dumps(obj, sort_keys=True)
            for _, obj in read_jsonl(self.path)
            if isinstance(obj, dict) and isinstance(obj.get("step"), int) and obj["step"] <= step
        ]
        atomic_write_text(self.path, "".join(line + "\n" for line in kept))

    def write(self, record: Mapping[str, Any]) -> None:
        if not self.enabled:
            return
        from trainers.harness import make_root, storefs

        make_root(self.path.parent)
        # never through a link planted in a stranger's run folder (`train --resume`)
        with storefs.open_file(self.path, "a", encoding="utf-8", root=self.path.parent) as f:
            f.write(json.dumps(dict(record), sort_keys=True) + "\n")
            f.fsync()  # an AppendFile: a refused write or sync is one line naming the log


def step_metrics(
    step: int,
    cfg: Any,  # TrainConfig
    n_problems: int,
    scheduler: Any,
    result: Any,
    snap: ParamSnapshot | None,
    reduce_sum: Any,
    values: dict[str, list[float]],
    scored: Sequence[Any],
    timer: Timer,
) -> dict[str, Any]:
    """One step's metrics line (module docstring), reduced over every process."""
    from trainers.engine import data

    lens = [float(len(s.rollout.completion_ids)) for s in scored]
    counts = reduce_sum(
        torch.tensor(
            [
                timer.spent.get("gen_tokens", 0.0),
                result.tokens,
                sum(lens),
                len(lens),
                timer.spent.get("overlong_prompts", 0.0),
            ],
            dtype=torch.float64,
        )
    ).tolist()
    t = timer.spent
    m: dict[str, Any] = {
        "step": step + 1,
        "epoch": data.epoch_of(step, cfg.prompts_per_step, n_problems),
        "lr": float(scheduler.get_last_lr()[0]),
        "grad_norm": result.grad_norm,
        **{k: v for k, v in result.loss.items()},
        **reduce_values(values, reduce_sum),
        "response_len": counts[2] / max(counts[3], 1.0),
        "overlong_prompts": int(counts[4]),
        "time_rollout": t.get("rollout", 0.0),
        "time_verify": t.get("verify", 0.0),
        "time_advantage": t.get("advantage", 0.0),
        "time_update": t.get("update", 0.0),
        "time_reference": result.reference_s,  # part of time_update
        "tokens_per_s": counts[0] / max(t.get("rollout", 0.0), 1e-9),
        "update_tokens_per_s": counts[1] / max(t.get("update", 0.0), 1e-9),
    }
    m["time_step"] = sum(t.get(k, 0.0) for k in ("rollout", "verify", "advantage", "update"))
    if snap is not None:
        m["param_step_norm"] = snap.step_norm(reduce_sum)
    return {k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in m.items()}


def step_line(metrics: dict[str, Any], total: int) -> str:
    """One training step as a log line, the fields TRL's trainer logs each step: loss,
    reward, KL, throughput and time per step (what a Slurm log shows of a run)."""

    def num(key: str, spec: str) -> str:
        value = metrics.get(key)
        return "-" if value is None else format(value, spec)

    return (
        f"step {metrics.get('step')}/{total}: loss {num('loss', '.4f')} "
        f"reward {num('reward_mean', '.3f')} kl {num('kl', '.3e')} "
        f"lr {num('lr', '.2e')} grad_norm {num('grad_norm', '.3f')} "
        f"tokens/s {num('tokens_per_s', '.1f')} time/step {num('time_step', '.2f')} s"
    )
