"""The training loop every trainer shares: rollout -> verify -> advantages -> update.

``train(spec)`` runs one training run in this process; under ``accelerate launch`` / torchrun
every process runs it and accelerate joins them (DDP, FSDP, DeepSpeed: the user's accelerate
config decides). Each step takes ``prompts_per_step`` problems from the data stream, this
process's contiguous share of them is rolled out (per-request seeds: the samples do not
depend on the layout), scored by the verifier, turned into rows by the algorithm, and one
optimizer step is taken on the global batch (``update.policy_update``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainers.engine import checkpoint, data, manifest, setup, sharding
from trainers.engine.algorithm import Algorithm, Messages
from trainers.engine.config import TrainConfig, check_rollouts
from trainers.engine.context import StepEnv, step_context
from trainers.engine.metrics import MetricsLog, ParamSnapshot, Timer, step_line, step_metrics
from trainers.engine.rewards import RewardFn, reward_from_config
from trainers.engine.rollout_engines import ROLLOUT_ENGINES
from trainers.engine.setup import Parts, model_label
from trainers.engine.trackers import PROJECT, check_tracker, tracker_folder
from trainers.harness import (
    DEFAULT_VERSION,
    DataError,
    Problem,
    echo,
    keep_sandboxes,
    render_messages,
    stop_strings,
)

__all__ = ["RunSpec", "StepState", "TrainResult", "model_label", "train"]


@dataclass
class RunSpec:
    """Everything a run needs, resolved by the CLI (or a test, or the CPPO pipeline)."""

    algorithm: Algorithm
    config: TrainConfig
    training: data.TrainingSet
    out_dir: Path
    model: str | None = None  # None: the embedded default model
    seed: int = 0
    resume: bool = False
    progress: bool = True
    prompt: Callable[[Problem], Messages] | None = None  # default: the direct-solve prompt
    stop: tuple[str, ...] | None = None
    reward: RewardFn | None = None  # default: REWARDS[config.reward]
    chat: str = "auto"
    # called after each step; a returned reason (plateau, target reached) ends the run there,
    # with its state and HF folder saved: the explicit stop signal of a stage
    on_step: Callable[[int, dict[str, Any]], str | None] | None = None
    extra_manifest: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrainResult:
    out_dir: Path
    steps: int
    checkpoint: Path | None
    last_metrics: dict[str, Any]
    base_model: str = ""
    stopped: str | None = None  # the reason on_step gave for ending before the last step


def train(spec: RunSpec) -> TrainResult:
    """One training run in this process (module docstring). A 1-process offloaded run gets
    its own 1-process group for the duration (``sharding.process_group``)."""
    with sharding.process_group(spec.config.sharding):
        return _train(spec)


@dataclass
class StepState:
    """What the loop carries from one step to the next."""

    total: int
    metrics: dict[str, Any] = field(default_factory=dict)
    saved: Path | None = None  # the newest HF folder
    stopped: str | None = None  # the reason on_step gave for ending here
    warned_overlong: bool = False


def _env(spec: RunSpec, parts: Parts, rollout: Any) -> StepEnv:
    from trainers.harness import SamplingParams

    cfg, acc = spec.config, parts.accelerator
    version = cfg.prompt_version or DEFAULT_VERSION
    return StepEnv(
        seed=spec.seed,
        prompt=spec.prompt or (lambda p: render_messages(p, version)),
        stop=spec.stop if spec.stop is not None else stop_strings(version),
        rollout=rollout,
        sampling=SamplingParams(
            temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_tokens
        ),
        reward=spec.reward or reward_from_config(cfg),
        policy=parts.policy,
        tokenizer=parts.tokenizer,
        pad_id=parts.pad_id,
        micro_rows=cfg.micro_batch_rows,
        chat=spec.chat,
        enable_thinking=cfg.enable_thinking,
        logits_chunk=cfg.logits_chunk_tokens,
        reduce_sum=setup.all_reduce_sum(acc),  # global-batch statistics (CPPO M = 1 "loo")
        gather=setup.gather(acc),
        is_main=acc.is_main_process,
        prompt_version=version,
    )


def _rollout_engine(spec: RunSpec, parts: Parts) -> Any:
    """The configured rollout engine; the process's fp32 matmul precision is set after it
    is built (vLLM's engine sets "highest" for the whole process)."""
    import torch

    cfg, acc = spec.config, parts.accelerator
    options = {
        "batch_size": cfg.rollout_batch,
        "model_path": parts.model_path,
        "gpu_memory_utilization": cfg.vllm_gpu_memory_utilization,
        "max_model_len": cfg.vllm_max_model_len or None,
        # vllm_max_model_len 0: the longest training prompt plus max_tokens (asked lazily)
        "longest_prompt": lambda: _longest_prompt(spec, parts),
        "max_tokens": cfg.max_tokens,
        "enforce_eager": cfg.vllm_enforce_eager,
        "sleep": cfg.vllm_sleep,
        "chat": spec.chat,
        "enable_thinking": cfg.enable_thinking,
        "process_index": acc.process_index,
        "local_process_index": acc.local_process_index,
        "num_processes": acc.num_processes,
    }
    rollout = ROLLOUT_ENGINES.get(cfg.rollout_engine)(parts.policy, parts.tokenizer, options)
    torch.set_float32_matmul_precision(cfg.matmul_precision)
    return rollout


def _longest_prompt(spec: RunSpec, parts: Parts) -> int:
    """Tokens of the run's longest prompt, as the rollouts encode it, plus what the
    algorithm's prompts may carry on top (``Algorithm.prompt_carries``: CPPO's solver prompt
    holds a plan of up to max_tokens)."""
    from trainers.harness import GenRequest, SamplingParams
    from trainers.harness import chat as chatmod

    cfg = spec.config
    version = cfg.prompt_version or DEFAULT_VERSION
    render = spec.prompt or (lambda p: render_messages(p, version))
    params = SamplingParams(max_tokens=cfg.max_tokens)
    longest = max(
        (
            len(
                chatmod.encode(
                    parts.tokenizer,
                    GenRequest(params, messages=render(p)),
                    spec.chat,
                    cfg.enable_thinking,
                )
            )  # fmt: skip
            for p in spec.training.problems
        ),
        default=0,
    )
    return longest + spec.algorithm.prompt_carries(cfg.max_tokens)


def _train(spec: RunSpec) -> TrainResult:
    cfg = spec.config
    per_prompt = spec.algorithm.rollouts_per_prompt()
    check_rollouts(
        cfg.prompts_per_step * per_prompt,
        f"prompts_per_step {cfg.prompts_per_step} x {per_prompt} a prompt ({spec.algorithm.name})",
        cfg.max_rollouts_per_step,
    )
    out = Path(spec.out_dir)
    accelerator = setup.accelerator(cfg, out)
    world, rank = accelerator.num_processes, accelerator.process_index
    if cfg.prompts_per_step % world:
        raise DataError(
            f"config prompts_per_step: {cfg.prompts_per_step} does not split evenly over "
            f"{world} processes"
        )
    existing = checkpoint.agreed_state(accelerator, out)
    if existing is not None and not spec.resume:
        raise DataError(f"{out} already holds a training run: pass --resume, or another --out")
    if spec.resume:  # against the run's recorded config, whether or not a state exists
        manifest.check_resumable(out, spec.algorithm.name, model_label(spec.model))
        manifest.check_resume_config(out, spec)
        if existing is None and accelerator.is_main_process:
            echo(manifest.nothing_to_resume(out, manifest.recorded(out)), err=True)
    parts = setup.build(cfg, spec.model, accelerator)
    start = 0
    if existing is not None:
        trusted = cfg.trusted_state_globals
        state = checkpoint.load_state(accelerator, existing, parts.sharded_state, trusted)
        start = int(state["step"])
    problems = spec.training.problems
    total = data.steps_for(len(problems), cfg.prompts_per_step, cfg.epochs, cfg.max_steps)
    if existing is not None:
        manifest.check_resume_steps(out, start, total, say=accelerator.is_main_process)
    log = MetricsLog(out, accelerator.is_main_process)
    log.truncate_after(start)
    if accelerator.is_main_process:
        manifest.write(
            out, spec, cfg, parts.base_label, parts.model_path, accelerator, total, start,
            model=parts.model,
        )  # fmt: skip
    if cfg.report_to != "none":
        tracker_folder(cfg.report_to, out)  # every process: all raise, none waits alone
        accelerator.init_trackers(
            PROJECT,
            config=manifest.flat_config(spec),
            init_kwargs=check_tracker(cfg.report_to, out),
        )
    from trainers.harness import progress_bar

    run = StepState(total)
    share = cfg.prompts_per_step // world
    quiet = not (spec.progress and accelerator.is_main_process)
    with contextlib.ExitStack() as stack:  # unwound in reverse: bar, engine, sandboxes, trackers
        if cfg.report_to != "none":
            stack.callback(accelerator.end_training)
        stack.enter_context(keep_sandboxes())  # the verifier's sandboxes live across steps
        rollout = _rollout_engine(spec, parts)
        stack.callback(rollout.close)
        env = _env(spec, parts, rollout)
        bar = stack.enter_context(progress_bar("train", total, quiet=quiet, completed=start))
        for step in range(start, run.total):
            batch = data.step_problems(problems, step, cfg.prompts_per_step, spec.seed)
            local = batch[rank * share : (rank + 1) * share]
            _step(spec, parts, env, run, step, local, log)
            bar(1)
            bar.log(step_line(run.metrics, run.total))  # per step, as TRL logs (a log has no bar)
            bar.note(_note(run.metrics))
            if run.stopped is not None:
                break
    if run.saved is None and accelerator.is_main_process:
        # nothing saved in this invocation (a resume of a finished run): the folder `final`
        # names, as a fresh run reports it; never the link, whose target a later resume moves
        run.saved = checkpoint.final_folder(out)
    return TrainResult(out, run.total, run.saved, run.metrics, parts.base_label, run.stopped)


def _step(
    spec: RunSpec,
    parts: Parts,
    env: StepEnv,
    run: StepState,
    step: int,
    local: Sequence[Problem],
    log: MetricsLog,
) -> None:
    """One step: rollouts -> rows -> update(s) -> sync -> metrics -> saves -> stop signal."""
    from trainers.engine.update import old_policy_logprobs, policy_inference, policy_update

    cfg, algo, acc, model = spec.config, spec.algorithm, parts.accelerator, parts.model
    timer = Timer()
    ctx = step_context(step, env, timer)
    scored = algo.collect(local, ctx)
    # every rollout of the step is done (CPPO's two rounds included): the update may have the
    # rollout engine's memory until the sync after it wakes the engine (vllm_sleep)
    env.rollout.sleep()
    with timer.phase("advantage"):
        step_rows = algo.rows(scored, ctx)
    snap: list[ParamSnapshot] = []
    params = [p for p in model.parameters() if p.requires_grad]

    def before_step() -> None:
        if cfg.log_param_step_norm:
            snap[:] = [ParamSnapshot(params)]

    with timer.phase("update"):
        old = None
        if cfg.updates_per_rollout > 1:
            with policy_inference(model):  # per-process counts of forwards differ
                old = old_policy_logprobs(
                    model, step_rows.rows, cfg.micro_batch_rows, parts.pad_id, acc.device,
                    cfg.temperature, cfg.logits_chunk_tokens,
                )  # fmt: skip
        for _ in range(cfg.updates_per_rollout):
            result = policy_update(
                acc,
                model,
                parts.reference,
                parts.optimizer,
                step_rows.rows,
                loss_config=_loss_config(cfg),
                micro_rows=cfg.micro_batch_rows,
                pad_id=parts.pad_id,
                max_grad_norm=cfg.max_grad_norm,
                all_reduce_sum=env.reduce_sum,
                on_before_step=before_step,
                old_logprobs=old,
            )
            parts.scheduler.step()  # once per optimizer step, not once per rollout
        env.rollout.sync(parts.policy)
    run.metrics = step_metrics(
        step, cfg, len(spec.training.problems), parts.scheduler, result,
        snap[0] if snap else None, env.reduce_sum, step_rows.values, scored, timer,
    )  # fmt: skip
    log.write(run.metrics)
    if cfg.report_to != "none":
        acc.log(run.metrics, step=step + 1)
    done = step + 1
    state_now = done % cfg.state_every == 0 or done == run.total
    hf_now = done % cfg.save_every == 0 or done == run.total
    _save(spec, parts, run, done, state_now, hf_now)
    # after this step's saves: a stage's on_step (CPPO's RM refresh) finds the state on disk
    if spec.on_step is not None:
        run.stopped = spec.on_step(done, run.metrics) or None
    if run.stopped is not None:  # end here, with this step's state and HF folder on disk
        _save(spec, parts, run, done, not state_now, not hf_now)
        run.total = done
    overlong = run.metrics.get("overlong_prompts") or 0
    if overlong and not run.warned_overlong and acc.is_main_process:
        run.warned_overlong = True  # once a run: metrics.jsonl has every step's count
        echo(
            f"warning: step {done}: {overlong} rollouts were not decoded, their prompts "
            "fill the model's context (reward 0, nothing trained; metric overlong_prompts)",
            err=True,
        )


def _save(spec: RunSpec, parts: Parts, run: StepState, done: int, state: bool, hf: bool) -> None:
    """This step's resumable state and / or HF folder."""
    acc, cfg = parts.accelerator, spec.config
    if state:
        cursor = {"cursor": done, "seed": spec.seed}
        checkpoint.save_state(acc, spec.out_dir, done, cursor, parts.sharded_state)
    if hf:
        folder = checkpoint.save_hf(
            acc, parts.model, parts.tokenizer, spec.out_dir, done, cfg.keep_folders
        )
        run.saved = folder or run.saved


def _loss_config(cfg: TrainConfig) -> Any:
    from trainers.core.loss import LossConfig

    return LossConfig(
        clip_eps=cfg.clip_eps,
        beta=cfg.kl_beta,
        solver_beta=cfg.kl_beta_solver,
        aggregation=cfg.aggregation,
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature,  # every log-prob of the loss is taken at the sampling T
        is_cap=cfg.vllm_is_cap,
        logits_chunk_tokens=cfg.logits_chunk_tokens,
    )


def _note(metrics: dict[str, Any]) -> str:
    overlong = metrics.get("overlong_prompts") or 0
    return f"reward {metrics.get('reward_mean') or 0:.3f} kl {metrics.get('kl') or 0:.2e}" + (
        f" ({overlong} prompts fill the context: reward 0)" if overlong else ""
    )
