"""``vllm`` rollout engine: a colocated vLLM engine that gets the policy's weights in place.

After every optimizer step the trainer calls ``sync(model)``: the policy's weights are
gathered to full tensors one at a time (``weight_sync.full_tensors``: DTensor / FSDP1 /
ZeRO-3), renamed to what the engine's model class expects (``weight_sync.vllm_names``: a
Qwen3.5 or Gemma 4 text policy into the multimodal class's ``model.language_model.*``) and
streamed into the engine with ``load_weights`` (no disk round trip); then the prefix cache is
reset (cached KV blocks were computed by the old weights). vLLM is imported lazily; the engine
is built from the policy's starting folder, so its tokenizer and config match.

One engine per process: under torchrun / ``accelerate launch`` (WORLD_SIZE > 1) it is built
with vLLM's ``external_launcher`` executor, which reads RANK / LOCAL_RANK and puts each
process's engine on its own GPU (the uniprocess executor would put every one on cuda:0), as
TRL's colocate mode does. Building the engine reseeds the global RNGs (vLLM's
``set_random_seed``): the trainer's RNG state (a resumed one included) is restored afterwards.
``sleep`` (TrainConfig ``vllm_sleep``) frees the engine's weights and KV cache while the
trainer updates: ``sleep()`` once a step, after the step's last rollout (vLLM's level 2: the
weights are discarded, not offloaded), and ``sync`` wakes the weights, reloads every one,
then wakes the KV cache. The order is vLLM 0.32's rule (``v1/engine/core.py`` ``wake_up``):
the scheduler resumes only when no sleep tag (``weights``, ``kv_cache``) is left asleep, so
a ``generate`` with a tag asleep would queue its requests forever; and after level 2 the woken
weights hold garbage until they are loaded. Every rollout of a step (CPPO's planner round,
then its solver round) therefore runs awake, and ``generate`` while asleep is an error, not
a hang (``tests/helpers/fake_vllm.py`` keeps vLLM's tag bookkeeping for the tests). Read
against vLLM 0.32's source and TRL's colocate mode; the tested range is the ``vllm`` extra's
pin.

Prompts are encoded by the same ``chat.encode`` as the hf path and handed to vLLM as token
ids, so both engines sample the same prompts; each request keeps its own seed.

Each completion token's log-prob is asked for (``logprobs=0``: the sampled token's) after
temperature scaling (``logprobs_mode="processed_logprobs"``, as TRL does), so the update can log
the mean |logp_vllm - logp_policy| and, when ``vllm_is_cap`` is set, apply TRL's truncated
importance-sampling correction. A vLLM without ``logprobs_mode`` reports raw (T = 1) log-probs,
which would not compare; it reports none then.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from trainers.engine import weight_sync
from trainers.engine.rollout import (
    CONTEXT_FULL,
    Rollout,
    RolloutEngine,
    RolloutRequest,
    _finish,
    fits_context,
)
from trainers.harness import SamplingParams, import_vllm
from trainers.harness import chat as chatmod


def _engine_model_loader(llm: Any) -> Any:
    """A callable f(fn) running fn(model) on the engine's model, across vLLM versions."""
    if hasattr(llm, "apply_model"):  # vLLM >= 0.8: works for the V1 engine too
        return llm.apply_model
    executor = llm.llm_engine.model_executor  # V0 engine, single worker
    model = executor.driver_worker.model_runner.model
    return lambda fn: [fn(model)]


class VLLMRollout:
    uses_policy = False  # samples from its own synced weights: the policy stays sharded

    def __init__(self, model_path: str, tokenizer: Any, options: Mapping[str, Any]) -> None:
        # Colocated: the engine core runs in this process (as TRL's colocate mode does), so
        # load_weights reads the policy's tensors directly: no pickling, no second process.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        vllm = import_vllm()
        self._vllm = vllm
        self.tokenizer = tokenizer
        self.chat = str(options.get("chat", "auto"))
        self.enable_thinking = options.get("enable_thinking", False)
        self.sleep_mode = bool(options.get("sleep", False))
        self.asleep = False  # level-2 asleep: weights discarded until the next sync
        if self.sleep_mode and not _sleep_available():
            raise ValueError(
                "config vllm_sleep: this platform's vLLM has no sleep mode (it needs CUDA's "
                "memory pool; vLLM 0.32 on the CPU refuses it); set vllm_sleep: false"
            )
        config = _read_config(model_path)
        self.names = weight_sync.vllm_names(config)
        kwargs = engine_kwargs(model_path, options, _multimodal(config), config)
        # a process group that predates the engine (the trainer's) outlives it (close)
        self._foreign_group = _group_up()
        with _rng_preserved():  # vLLM seeds torch / numpy / random globally
            self.llm, self.logprobs = _build(vllm, kwargs)

    def generate(
        self, requests: Sequence[RolloutRequest], sampling: SamplingParams
    ) -> list[Rollout]:
        if self.asleep:  # vLLM would queue the requests and never schedule them
            raise RuntimeError(
                "vLLM rollout engine: generate() while asleep (vllm_sleep discarded its "
                "weights); sync(model) must wake it and reload them first"
            )
        context = self._context()
        encoded = [
            chatmod.encode(self.tokenizer, r.gen_request(sampling), self.chat, self.enable_thinking)
            for r in requests
        ]
        fits = [fits_context(len(ids), context) for ids in encoded]
        prompts, params = [], []
        for req, ids, fit in zip(requests, encoded, fits, strict=True):
            if not fit:  # vLLM would refuse the whole batch
                continue
            prompts.append({"prompt_token_ids": ids})
            params.append(
                self._vllm.SamplingParams(
                    temperature=sampling.temperature,
                    top_p=sampling.top_p,
                    max_tokens=sampling.max_tokens,
                    seed=req.seed,
                    stop=list(req.stop) or None,
                    logprobs=0 if self.logprobs else None,
                )
            )
        outs = iter(self.llm.generate(prompts, params, use_tqdm=False) if prompts else [])
        rollouts = []
        for req, ids, fit in zip(requests, encoded, fits, strict=True):
            if not fit:
                rollouts.append(_finish(req, ids, (), "", CONTEXT_FULL))
                continue
            out = next(outs).outputs[0]
            lp = sampled_logprobs(out) if self.logprobs else None
            rollouts.append(
                _finish(req, ids, out.token_ids, out.text, out.finish_reason or "length", lp)
            )
        return rollouts

    def _context(self) -> int | None:
        """The engine's max_model_len (vLLM >= 0.6 keeps it on the engine's model config)."""
        engine = getattr(self.llm, "llm_engine", None)
        for owner in (self.llm, engine):
            cfg = getattr(owner, "model_config", None)
            if cfg is not None and isinstance(getattr(cfg, "max_model_len", None), int):
                return int(cfg.max_model_len)
        return None

    def sleep(self) -> None:
        """Free the engine's weights and KV cache until the next ``sync`` (``vllm_sleep``;
        else nothing). Level 2: the weights are discarded, not copied to the host, since the
        sync after the update replaces every one of them anyway."""
        if self.sleep_mode and not self.asleep:
            self.llm.sleep(level=2)
            self.asleep = True

    def sync(self, model: Any) -> None:
        """The policy's weights into the engine; an engine asleep is woken around the load:
        weights first (their memory back, its contents undefined after level 2), the load,
        then the KV cache, the last tag, which lets vLLM's scheduler run again."""
        if self.asleep:
            self.llm.wake_up(tags=["weights"])
        self._load(model)
        if self.asleep:
            awake = self.llm.wake_up(tags=["kv_cache"])
            if awake is False:  # vLLM >= 0.32 says whether every tag is resident again
                raise RuntimeError("vLLM rollout engine: still asleep after waking every tag")
            self.asleep = False
        if hasattr(self.llm, "reset_prefix_cache"):
            self.llm.reset_prefix_cache()

    def _load(self, model: Any) -> None:
        # one gathered tensor at a time (every process iterates: a collective when sharded)
        weights = ((self.names(name), t) for name, t in weight_sync.full_tensors(model))
        if _inplace_reload():
            # vLLM >= 0.32: load_weights after the engine processed (repacked) its weights
            # fails on some backends (the CPU one: a Parameter without weight_loader); the
            # worker's reload_weights restores the checkpoint layout, loads, re-processes
            self.llm.collective_rpc(
                "reload_weights", kwargs={"weights_iterator": weights, "is_checkpoint_format": True}
            )
        else:
            apply = _engine_model_loader(self.llm)
            for pair in weights:
                apply(lambda m, pair=pair: m.load_weights(weights=[pair]))

    def close(self) -> None:
        """Shut the engine down (its memory, its worker processes, the process groups it
        created). vLLM's engine-core shutdown ends in ``cleanup_dist_env_and_memory``, which
        destroys the default process group too: when that group predates the engine (the
        trainer's: FSDP2, the CPPO stage barriers) it is left alone (``_keep_default_group``)."""
        llm, self.llm = self.llm, None
        if llm is None:
            return
        engine = getattr(llm, "llm_engine", None)
        keep = _keep_default_group() if self._foreign_group else contextlib.nullcontext()
        with keep:
            for owner in (engine, getattr(engine, "engine_core", None)):
                shutdown = getattr(owner, "shutdown", None)
                if callable(shutdown):
                    shutdown()  # detaches vLLM's finalizer: no second teardown at collection
                    break
        del llm
        import gc

        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:  # pragma: no cover
            pass


def _group_up() -> bool:
    import torch.distributed as dist

    return bool(dist.is_available() and dist.is_initialized())


@contextlib.contextmanager
def _keep_default_group() -> Iterator[None]:
    """``torch.distributed.destroy_process_group`` leaves the default group alone for the
    block (vLLM 0.32's ``destroy_distributed_environment`` calls it with no argument); the
    groups vLLM made itself (``new_group``) are still destroyed. vLLM looks the function up
    on the module at call time, so replacing the attribute reaches it."""
    import torch.distributed as dist

    real = dist.destroy_process_group

    def destroy(group: Any = None) -> None:
        if group is None or group is dist.group.WORLD:
            return
        real(group)

    dist.destroy_process_group = destroy
    try:
        yield
    finally:
        dist.destroy_process_group = real


def _inplace_reload() -> bool:
    """Whether this vLLM reloads weights in place through its workers (``reload_weights``)."""
    import importlib.util

    try:
        return (
            importlib.util.find_spec("vllm.model_executor.model_loader.reload.inplace") is not None
        )
    except (ImportError, ValueError):  # a stand-in vllm module without a spec, or no vllm
        return False


def _sleep_available() -> bool:
    """vLLM's own answer (``current_platform.is_sleep_mode_available``); True where it cannot
    tell, so vLLM's own check decides."""
    try:
        from vllm.platforms import current_platform

        return bool(current_platform.is_sleep_mode_available())
    except (ImportError, AttributeError):
        return True


def _multimodal(config: Mapping[str, Any]) -> bool:
    """A composite checkpoint (Qwen3.5, Gemma 4): a text config beside its towers' configs."""
    return isinstance(config.get("text_config"), Mapping)


def engine_kwargs(
    model_path: str,
    options: Mapping[str, Any],
    multimodal: bool = False,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """vLLM's LLM(...) arguments from the rollout options (TrainConfig's vllm_* keys).
    ``multimodal``: the checkpoint is a composite; the policy is its text model and every
    prompt is text, so vLLM (>= 0.32) runs the language model only: every modality's limit
    is 0, and it neither builds the vision / audio towers nor profiles their memory.
    ``config``: the checkpoint's config.json (its context caps ``max_model_len``)."""
    kwargs: dict[str, Any] = {
        "model": model_path,
        "gpu_memory_utilization": float(options.get("gpu_memory_utilization", 0.3)),
        "enable_prefix_caching": True,
        "dtype": str(options.get("dtype", "auto")),
        "enforce_eager": bool(options.get("enforce_eager", False)),
        "seed": int(options.get("process_index", 0)),
    }
    length = max_model_len(options, config or {})
    if length is not None:
        kwargs["max_model_len"] = length
    if options.get("sleep"):
        kwargs["enable_sleep_mode"] = True
    if multimodal:
        kwargs["language_model_only"] = True
    world = int(options.get("num_processes", 1))
    if world > 1:  # one engine per process, each on its own device (RANK / LOCAL_RANK)
        os.environ.setdefault("RANK", str(options.get("process_index", 0)))
        os.environ.setdefault("LOCAL_RANK", str(options.get("local_process_index", 0)))
        os.environ.setdefault("WORLD_SIZE", str(world))
        kwargs["distributed_executor_backend"] = "external_launcher"
    return kwargs


# tokens beside the longest direct prompt and max_tokens: prompt kinds' template differences
# (CPPO's plan and solve prompts, UpSkill's skill prefix); a prompt that still does not fit
# is not decoded (reward 0, counted in overlong_prompts), never a failed batch
PROMPT_SLACK = 512


def model_context(config: Mapping[str, Any]) -> int | None:
    """The checkpoint's own context length (its text config's, for a composite)."""
    text = config.get("text_config")
    for cfg in (text if isinstance(text, Mapping) else {}, config):
        value = cfg.get("max_position_embeddings")
        if isinstance(value, int) and value > 0:
            return value
    return None


def max_model_len(options: Mapping[str, Any], config: Mapping[str, Any]) -> int | None:
    """vLLM's ``max_model_len``: the configured one (TrainConfig ``vllm_max_model_len``),
    else the run's longest prompt (``longest_prompt()``: what the algorithm's prompts carry
    included) plus ``max_tokens`` and ``PROMPT_SLACK``, at most the model's own context.
    vLLM's default, the model's context (262,144 tokens for Qwen3.5), must fit one request's
    KV cache at start-up, which a 9B policy at utilisation 0.3 does not leave. None: neither
    is known (vLLM's default)."""
    if options.get("max_model_len"):
        return int(options["max_model_len"])
    longest = options.get("longest_prompt")
    if not callable(longest):
        return None
    wanted = int(longest()) + int(options.get("max_tokens", 0)) + PROMPT_SLACK
    context = model_context(config)
    return min(wanted, context) if context else wanted


def _build(vllm: Any, kwargs: dict[str, Any]) -> tuple[Any, bool]:
    try:  # log-probs after temperature, comparable with the policy's (vLLM >= 0.10.2)
        return vllm.LLM(**kwargs, logprobs_mode="processed_logprobs"), True
    except TypeError:
        return vllm.LLM(**kwargs), False


def _read_config(model_path: str) -> dict[str, Any]:
    from pathlib import Path

    cfg = Path(model_path) / "config.json"
    if cfg.is_file():
        from trainers.harness import userfiles  # a model folder may be a stranger's

        loaded = userfiles.read_json(cfg, userfiles.MAX_SMALL)
        return loaded if isinstance(loaded, dict) else {}
    from transformers import AutoConfig  # a hub id: its config, as vLLM reads it

    return AutoConfig.from_pretrained(model_path).to_dict()


@contextlib.contextmanager
def _rng_preserved() -> Iterator[None]:
    """Restore python / numpy / torch (and CUDA) RNG states after the block."""
    import random

    import numpy as np
    import torch

    states = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def sampled_logprobs(completion: Any) -> list[float] | None:
    """The log-prob vLLM reported for each sampled token (NaN where it reported none)."""
    per_token = getattr(completion, "logprobs", None)
    if not per_token:
        return None
    out = []
    for tok, entry in zip(completion.token_ids, per_token, strict=False):
        lp = entry.get(tok) if entry else None
        out.append(float(getattr(lp, "logprob", lp)) if lp is not None else float("nan"))
    out += [float("nan")] * (len(completion.token_ids) - len(out))
    return out


def make_vllm_rollout(model: Any, tokenizer: Any, options: Mapping[str, Any]) -> RolloutEngine:
    path = options.get("model_path")
    if not path:
        raise ValueError("the vllm rollout engine needs the policy's starting folder (model_path)")
    engine = VLLMRollout(str(path), tokenizer, options)
    engine.sync(model)  # a resumed policy differs from the folder
    return engine
