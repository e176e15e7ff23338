"""`cppo-bench train ... --dry-run` and the preflight: per-stage memory estimates on the 4B and
9B study presets (shapes shipped in trainers/model_shapes/, no weights), a layout that cannot
fit refused in one line, an offline node missing a hub model refused at start, and the
estimate's training state against what torch really allocates for a tiny model."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "cppo-bench")
STAGE = re.compile(r"^  (sft|rm|warmup|joint): .+: (\d+\.\d) GiB/GPU \(", re.M)


def _train(*args: str, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, **env}
    return subprocess.run(
        [CLI, "train", "cppo", *args], cwd=REPO, env=full, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("size", ["4b", "9b"])
def test_dry_run_prints_every_stage_estimate_of_the_study_presets(size: str) -> None:
    model = f"Qwen/Qwen3.5-{size.upper()}"
    preset = f"trainers/configs/cppo.study-{size}.yaml"
    proc = _train("--model", model, "--config", preset, "--dry-run", "--set",
                  "engine.rollout_engine=hf")  # fmt: skip
    refused = [x for x in proc.stderr.splitlines() if x.startswith("refused:")]
    # no card given: memory is not compared; only this machine's disk may be too small
    assert all("GiB free, a training state" in x for x in refused), proc.stderr
    assert proc.returncode == (2 if refused else 0)
    stages = dict(STAGE.findall(proc.stdout))
    assert set(stages) == {"sft", "rm", "warmup", "joint"}, proc.stdout
    assert all(float(v) > 1 for v in stages.values())
    assert "shape from Qwen--Qwen3.5" in proc.stdout  # no weights, no hub


def test_a_layout_that_cannot_fit_is_refused_in_one_line() -> None:
    study_4b = ("--model", "Qwen/Qwen3.5-4B", "--config", "trainers/configs/cppo.study-4b.yaml",
                "--dry-run", "--gpu-memory", "80GiB", "--set", "engine.rollout_engine=hf")  # fmt: skip
    fits = _train(*study_4b)
    assert "refused: stage" not in fits.stderr, fits.stderr  # the preset's layouts fit 80 GB
    # the SFT stage as it trained before issue 43 (fp32 AdamW state of 4B on the card, no
    # checkpointing, full logits, 4 rows at once: ~103 GiB) does not
    old = ["engine.sharding=none", "engine.gradient_checkpointing=false",
           "engine.logits_chunk_tokens=0", "engine.micro_batch_rows=4"]  # fmt: skip
    plain = _train(*study_4b, *[a for kv in old for a in ("--set", kv)], "--stages", "sft")
    assert plain.returncode == 2
    refused = [x for x in plain.stderr.splitlines() if x.startswith("refused: stage")]
    assert len(refused) == 1 and refused[0].startswith("refused: stage sft (none"), plain.stderr
    assert refused[0].endswith("GiB per GPU; the card has 80.0 GiB")
    assert not STAGE.findall(plain.stdout)[1:]  # --stages sft: the plan is that stage only


def test_an_offline_node_missing_a_hub_model_is_refused_at_start(tmp_path: Path) -> None:
    proc = _train("--model", "Qwen/Qwen3.5-9B", "--dry-run", "--set", "engine.rollout_engine=hf",
                  HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path))  # fmt: skip
    assert proc.returncode == 2
    assert "refused: policy Qwen/Qwen3.5-9B: not in the local Hugging Face cache" in proc.stderr
    real = _train("--model", "Qwen/Qwen3.5-9B", "--out", str(tmp_path / "run"),
                  HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path))  # fmt: skip
    assert real.returncode == 1 and "not in the local Hugging Face cache" in real.stderr
    assert not (tmp_path / "run").exists()  # refused before any stage


def test_the_state_estimate_equals_what_adamw_allocates() -> None:
    """The oracle is torch: every parameter, gradient and AdamW moment tensor after one step
    of a tiny Llama and a tiny Qwen3.5, against memory_plan's 16 B/param from the config."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from trainers.engine.memory_plan import param_count, shape_of, state_bytes

    llama = transformers.LlamaConfig(
        vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False,
    )  # fmt: skip
    qwen = transformers.Qwen3_5TextConfig(
        vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, linear_conv_kernel_dim=4,
        linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
        linear_num_value_heads=4, layer_types=["linear_attention"] * 3 + ["full_attention"],
    )  # fmt: skip
    for cfg, cls in ((llama, transformers.LlamaForCausalLM),
                     (qwen, transformers.Qwen3_5ForCausalLM)):  # fmt: skip
        model = cls(cfg)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        model(
            input_ids=torch.tensor([[1, 2, 3, 4]]), labels=torch.tensor([[1, 2, 3, 4]])
        ).loss.backward()
        opt.step()
        tensors = [p for p in model.parameters()] + [p.grad for p in model.parameters()]
        tensors += [t for st in opt.state.values() for k, t in st.items() if k != "step"]
        measured = sum(t.numel() * t.element_size() for t in tensors)
        shape = shape_of(cfg.to_dict())
        assert param_count(shape) == sum(p.numel() for p in model.parameters())
        assert state_bytes(shape, "none", 1) == (measured, 0)


def test_a_folder_with_only_its_config_is_planned_without_weights(tmp_path: Path) -> None:
    """No weights are read: a folder holding only config.json (a Llama shape) is enough, for
    a non-CPPO algorithm too (one stage named after it)."""
    import json

    folder = tmp_path / "m"
    folder.mkdir()
    shape = {"model_type": "llama", "vocab_size": 1000, "hidden_size": 64, "num_hidden_layers": 2,
             "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2}  # fmt: skip
    (folder / "config.json").write_text(json.dumps(shape))
    proc = subprocess.run(
        [CLI, "train", "pkpo", "--model", str(folder), "--dry-run", "--gpu-memory", "1GiB"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    line = r"^  pkpo: none, logits chunk 512: 0\.\d GiB/GPU \(state 0\.0"
    assert re.search(line, proc.stdout, re.M), proc.stdout


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[1, 2]", "is not a JSON object"),
        ('{"vocab_size": 10, "hidden_size": -8, "num_hidden_layers": 2, '
         '"intermediate_size": 16}', ""),
        ('{"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": true, '
         '"intermediate_size": 16}', ""),
    ],
    ids=["not-an-object", "negative-size", "bool-size"],
)  # fmt: skip
def test_a_strangers_config_is_one_line_never_an_estimate(
    tmp_path: Path, text: str, problem: str
) -> None:
    from trainers.api import resolve
    from trainers.preflight import build_plan

    (tmp_path / "config.json").write_text(text)
    cfg = resolve("pkpo", preset="study", model=str(tmp_path)).config
    plan = build_plan("pkpo", cfg, str(tmp_path), {}, 80 * 2**30)
    assert plan.stages == []
    if problem:
        assert len(plan.problems) == 1 and problem in plan.problems[0]
    else:
        assert any("is not a non-negative integer" in n for n in plan.notes), plan.notes


@pytest.mark.parametrize(("installed", "version", "want"), [
    (False, None, "vllm is not installed"),
    (True, (0, 34), "vllm 0.34 is outside the tested range >=0.32,<0.33"),
    (True, (0, 32), ""),
])  # fmt: skip
def test_vllm_outside_its_pin_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, installed: bool, version: tuple | None, want: str
) -> None:
    from trainers import preflight
    from trainers.api import resolve

    monkeypatch.setattr(preflight, "_installed", lambda name: installed)
    monkeypatch.setattr(preflight, "_version", lambda dist: version)
    cfg = resolve("pkpo", preset="study", model="x", overrides={"rollout_engine": "vllm"}).config
    plan = preflight.build_plan("pkpo", cfg, None, {}, None)
    about = [p for p in plan.problems if "vllm" in p]
    assert len(about) == (1 if want else 0), plan.problems
    assert all(p.startswith("rollout_engine vllm: ") and want in p for p in about)
