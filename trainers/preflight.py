"""What `cppo-bench train` checks before any stage starts, and what `--dry-run` prints.

A job that will fail fails in its first minute: every model it will load resolves (a hub id
under ``HF_HUB_OFFLINE`` must be in the local cache), vLLM is installed when the rollouts use
it, each stage's memory estimate (``trainers.engine.memory_plan``) fits the card, and the disk
under the run folder holds the training states. No weights are loaded: shapes come from the
model's config.json (a local folder, the hub cache, or ``trainers/model_shapes/``).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainers.engine import memory_plan as mp
from trainers.harness import Registry, env, quote

SHAPES = Path(__file__).with_name("model_shapes")
RM_TOKENS = 512  # trainers/cppo_pipeline/reward_model.py RMConfig.max_tokens
EMBEDDED = "HuggingFaceTB/SmolLM2-135M-Instruct"  # the embedded default model's shape
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(GiB|GB|G)?\s*$", re.I)


def parse_memory(text: str) -> int:
    """``80GiB``, ``80GB`` (10^9), ``80`` (GiB) -> bytes; one ValueError line otherwise."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"--gpu-memory {quote(text)}: a size such as 80GiB or 141GB")
    unit = (m.group(2) or "GiB").lower()
    return int(float(m.group(1)) * (10**9 if unit == "gb" else 2**30))


@dataclass
class Plan:
    stages: list[mp.Estimate] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # each one line; any refuses the run
    notes: list[str] = field(default_factory=list)
    policy: mp.Shape | None = None

    def lines(self, card: int | None) -> list[str]:
        where = f"{card / mp.GIB:.0f} GiB card" if card else "no card given: not compared"
        out = [f"plan ({where}):"] + [f"  {e.line()}" for e in self.stages]
        return out + [f"  note: {n}" for n in self.notes]


def _installed(name: str) -> bool:
    import sys

    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


# A rule reads the engine config and the installed libraries and appends a problem line when
# the combination is known to fail; register one per combination (issue 43 names them).
VersionRule = Callable[["Plan", Any], None]
VERSION_RULES: Registry[VersionRule] = Registry("version rule")
VLLM_PIN = ((0, 32), (0, 33))  # pyproject's vllm extra: the version the engine was read against


def _version(dist: str) -> tuple[int, ...] | None:
    from importlib import metadata

    try:
        return tuple(int(x) for x in re.findall(r"\d+", metadata.version(dist))[:2])
    except metadata.PackageNotFoundError:
        return None  # a stand-in module (tests), not a distribution


@VERSION_RULES.register("vllm")
def _check_vllm(plan: Plan, engine: Any) -> None:
    """vLLM present and inside the pin when the rollouts use it (the engine and weight sync
    rely on 0.32's internals: sleep tags, reload_weights, the external launcher)."""
    if engine.rollout_engine != "vllm":
        return
    if not _installed("vllm"):
        plan.problems.append("rollout_engine vllm: vllm is not installed (pip install vllm)")
        return
    parts = _version("vllm")
    low, high = VLLM_PIN
    if parts is not None and not low <= parts < high:
        plan.problems.append(
            f"rollout_engine vllm: vllm {'.'.join(map(str, parts))} is outside the tested "
            f"range >={low[0]}.{low[1]},<{high[0]}.{high[1]} (pip install 'cppo-bench[vllm]')"
        )


def _is_hub_id(model: str) -> bool:
    return not Path(model).exists() and not model.endswith(".gguf") and model.count("/") == 1


def _cached_config(model: str) -> str | None:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    found = try_to_load_from_cache(model, "config.json")
    return found if isinstance(found, str) else None


def model_config(model: str | None, plan: Plan, role: str) -> dict[str, Any] | None:
    """The config.json dict of ``model`` (None: the embedded model); a problem line when an
    offline node cannot load it, a note when only the shipped shape is known."""
    name = model or EMBEDDED
    path: str | None = None
    if model is not None and (Path(model) / "config.json").is_file():
        path = str(Path(model) / "config.json")
    elif model is not None and model.endswith(".gguf"):
        plan.notes.append(f"{role} {model}: a GGUF file; memory not estimated")
        return None
    elif model is not None and _is_hub_id(model):
        path = _cached_config(model)
        if path is None and env.flag("HF_HUB_OFFLINE", False):
            plan.problems.append(
                f"{role} {model}: not in the local Hugging Face cache and HF_HUB_OFFLINE is "
                "set (download it first, or pass a local folder)"
            )
    elif model is not None:
        plan.problems.append(f"{role} {model}: no such folder or file")
        return None
    if path is None:
        shipped = SHAPES / f"{name.replace('/', '--')}.json"
        if not shipped.is_file():
            plan.notes.append(f"{role} {name}: no config.json at hand; memory not estimated")
            return None
        path = str(shipped)
        if model is not None:
            plan.notes.append(f"{role} {name}: shape from {shipped.name} (shipped)")
    from trainers.harness import userfiles  # a model folder may be a stranger's

    loaded = userfiles.read_json(Path(path), userfiles.MAX_SMALL)
    if not isinstance(loaded, dict):
        plan.problems.append(f"{role} {name}: {path} is not a JSON object")
        return None
    return loaded


def _shape(model: str | None, plan: Plan, role: str) -> mp.Shape | None:
    cfg = model_config(model, plan, role)
    if cfg is None:
        return None
    try:
        return mp.shape_of(cfg)
    except ValueError as exc:
        plan.notes.append(f"{role} {model}: {exc}; memory not estimated")
        return None


def build_plan(
    algo: str,
    config: Any,
    model: str | None,
    options: dict[str, Any],
    card: int | None,
    stages: list[str] | None = None,
) -> Plan:
    """The stages ``algo`` will run (``stages``: the selected ones, default all) with their
    per-GPU estimates, and what stops it."""
    plan = Plan()
    world = env.world_size()
    engine = config.engine if algo == "cppo" else config[0]
    policy = plan.policy = _shape(model, plan, "policy")
    for name in VERSION_RULES.names():  # library versions against the layout
        VERSION_RULES.get(name)(plan, engine)
    card_for_vllm = card or 80 * 10**9
    if algo == "cppo" and policy is not None:
        seq = mp.PROMPT_TOKENS + config.planner_max_tokens
        sft = mp.sft_estimate(policy, engine, config.sft.batch_size, seq, config.planner_max_tokens)
        plan.stages.append(sft)
    if algo == "cppo" and config.rm.kind == "generative":
        # as the stage picks it: the study's base on a GPU, the embedded model on a CPU
        rm_model = (
            options.get("rm_model") or config.rm.model or (config.rm.gpu_model if card else None)
        )
        rm = _shape(rm_model, plan, "reward model")
        if rm is not None:  # RMConfig.max_tokens: the prompt's tail the RM reads
            plan.stages.append(mp.rm_estimate(rm, engine, config.rm.batch_size, RM_TOKENS))
    judge = str(options.get("judge") or "").split("=", 1)[-1]  # [KIND=]BACKEND:MODEL
    if judge.startswith(("hf:", "vllm:")):
        _shape(judge.split(":", 1)[1], plan, "judge")
    if policy is not None:
        rl = ("warmup", "joint") if algo == "cppo" else (algo,)
        extra = config.planner_max_tokens if algo == "cppo" else 0  # the solver reads a plan
        for stage in rl:
            plan.stages.append(mp.rl_estimate(stage, policy, engine, world, card_for_vllm, extra))
        if stages:
            plan.stages = [e for e in plan.stages if e.stage in stages]
        if card is not None:
            for est in plan.stages:
                if est.total > card:
                    plan.problems.append(
                        f"stage {est.stage} ({est.layout}) needs ~{est.total / mp.GIB:.1f} GiB "
                        f"per GPU; the card has {card / mp.GIB:.1f} GiB"
                    )
    return plan


def check_disk(plan: Plan, out: Path, shape: mp.Shape | None, keep: int) -> None:
    """The run folder's file system holds ``keep`` states (a resumable state + HF folder)."""
    if shape is None:
        return
    where = out if out.exists() else next((p for p in out.parents if p.exists()), Path("."))
    need = mp.state_save_bytes(shape) * max(keep, 1)
    free = shutil.disk_usage(where).free
    plan.notes.append(f"disk: {need / mp.GIB:.1f} GiB per save cycle, {free / mp.GIB:.0f} free")
    if free < need:
        plan.problems.append(
            f"{where}: {free / mp.GIB:.1f} GiB free, a training state and HF folder need "
            f"~{need / mp.GIB:.1f} GiB"
        )


def card_memory(given: str | None) -> int | None:
    """--gpu-memory, else this process's CUDA device's memory, else None (not compared)."""
    if given:
        return parse_memory(given)
    if env.raw("CUDA_VISIBLE_DEVICES") == "" or not _installed("torch"):
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    # this process's card (under a launcher every rank asks; none touches another's device)
    index = env.integer("LOCAL_RANK", 0, 0, 1 << 20) % torch.cuda.device_count()
    return int(torch.cuda.get_device_properties(index).total_memory)


def preflight(
    algo: str,
    config: Any,
    model: str | None,
    options: dict[str, Any],
    out: Path,
    gpu_memory: str | None,
    stages: list[str] | None = None,
) -> tuple[Plan, int | None]:
    """The plan and the card it was compared with; ``plan.problems`` refuse the run."""
    card = card_memory(gpu_memory)
    plan = build_plan(algo, config, model, options, card, stages)
    engine = config.engine if algo == "cppo" else config[0]
    check_disk(plan, out, plan.policy, 1 if engine.keep_folders == 0 else engine.keep_folders)
    return plan, card
