"""One checkpoint format: every artifact kind survives a SIGKILL at every step of its save.

Each case saves version 1 of an artifact, then forks a child that saves version 2 and is
SIGKILLed at one phase of the save (after the temporary folder is made, after the files are
written, after fsync, between the two renames, after the swap). The folder must then load as
a complete version 1 or version 2, never a torn mix, and the next save must succeed. The forks
happen in a fresh process per kind (``python -m tests.trainers.test_trainers_artifacts KIND DIR``) that
never starts torch's thread pool: a fork after the pool has run deadlocks in the child.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from trainers.engine import artifacts, checkpoint  # noqa: E402

PHASES = ("prepared", "written", "fsynced", "old_moved", "new_moved")


class _Accelerator:
    """The part of accelerate's Accelerator the checkpoint module calls, one process."""

    is_main_process = True

    def __init__(self, model: Any) -> None:
        self.model = model

    def wait_for_everyone(self) -> None:
        pass

    def get_state_dict(self, model: Any) -> dict:
        return model.state_dict()

    def unwrap_model(self, model: Any) -> Any:
        return model

    def save_state(self, path: str) -> None:
        from safetensors.torch import save_file

        weights = {k: v.clone() for k, v in self.model.state_dict().items()}  # tied: copies
        save_file(weights, str(Path(path) / "model.safetensors"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, ...]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests.helpers.train_helpers import tiny_model_dir

    path = tiny_model_dir(tmp_path_factory.mktemp("tiny") / "m")
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path), path


def _fill(model: Any, version: int) -> None:
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(float(version))


def _version_of(model: Any) -> int:
    value = float(next(model.parameters()).flatten()[0])
    assert all(torch.all(p == value) for p in model.parameters()), "a torn mix of two versions"
    return int(value)


def _save(kind: str, root: Path, tiny: tuple[Any, ...], version: int) -> None:
    model, tok = tiny[0], tiny[1]
    _fill(model, version)
    if kind == "policy":
        checkpoint.save_hf(_Accelerator(model), model, tok, root, step=1)
    elif kind == "planner":
        with artifacts.saving(root / "planner", "planner", {"version": version}) as tmp:
            model.save_pretrained(tmp, safe_serialization=True)
            tok.save_pretrained(tmp)
    elif kind == "training_state":
        checkpoint.save_state(_Accelerator(model), root, step=version, extra={"v": version})
    elif kind == "reward_model":
        from trainers.core.gate_metrics import GateMetrics
        from trainers.cppo_pipeline import reward_model as rmod

        cfg = rmod.RMConfig(kind="ngram")
        rm = rmod.RM_KINDS.get("ngram").create(cfg)
        _fill(rm.module, version)
        rmod.save(rm, root / "rm", GateMetrics(0.9, 0.8, 0.8, 0.8, 0.17, 8, 8), cfg)


def _load_version(kind: str, root: Path) -> int:
    from transformers import AutoModelForCausalLM

    if kind == "policy":
        folder = root / checkpoint.HF_DIR / "step-00000001"
        artifacts.read_manifest(folder, "policy")
        return _version_of(AutoModelForCausalLM.from_pretrained(folder))
    if kind == "planner":
        artifacts.read_manifest(root / "planner", "planner")
        return _version_of(AutoModelForCausalLM.from_pretrained(root / "planner"))
    if kind == "training_state":
        state = checkpoint.latest_state(root)
        assert state is not None, "no complete state left"
        step = json.loads((state / checkpoint.TRAINER_STATE).read_text())["step"]
        weights = artifacts.load_tensors(state / "model.safetensors")
        assert all(torch.all(t == step) for t in weights.values()), "state of another step"
        return step
    from trainers.cppo_pipeline import reward_model as rmod

    rm, _ = rmod.load(root / "rm", rule=None)
    return _version_of(rm.module)


def kill_at_every_phase(kind: str, tmp_path: Path, tiny: tuple[Any, ...]) -> dict[str, int]:
    """phase -> the version found after a kill there (each check asserted on the way)."""
    seen = {}
    # a state is a new folder per step (named by LATEST, rewritten after the swap): nothing
    # old is moved aside, and a kill after the swap still finds LATEST naming the old step
    phases = [p for p in PHASES if not (kind == "training_state" and p == "old_moved")]
    for phase in phases:
        root = tmp_path / phase
        _save(kind, root, tiny, 1)
        pid = os.fork()
        if pid == 0:  # the child dies at `phase` of saving version 2

            def die(at: str, phase: str = phase) -> None:
                if at == phase:
                    os.kill(os.getpid(), signal.SIGKILL)

            artifacts.on_phase = die
            try:
                _save(kind, root, tiny, 2)
            finally:
                os._exit(0)  # the phase never came: a failed case below
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, phase
        version = _load_version(kind, root)
        assert version in (1, 2), phase
        seen[phase] = version
        _save(kind, root, tiny, 3)  # and the next save goes through
        assert _load_version(kind, root) == 3
    return seen


@pytest.mark.parametrize("kind", artifacts.KINDS)
def test_a_kill_at_any_phase_leaves_the_old_or_the_new_artifact(
    kind: str, tiny: tuple[Any, ...], tmp_path: Path
) -> None:
    from tests.helpers.tests_paths import REPO, toy_env

    model_dir = tiny[2]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.trainers.test_trainers_artifacts",
            kind,
            str(tmp_path),
            str(model_dir),
        ],
        cwd=REPO,
        env={**toy_env(), "TOKENIZERS_PARALLELISM": "false"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(seen) == set(PHASES) - ({"old_moved"} if kind == "training_state" else set())
    # a kill before the swap keeps the old artifact, one after it the new one
    assert seen["prepared"] == seen["written"] == seen["fsynced"] == 1
    assert seen["new_moved"] == (1 if kind == "training_state" else 2)
    assert seen.get("old_moved", 1) in (1, 2)


def test_a_folder_without_a_complete_manifest_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    with artifacts.saving(folder, "planner") as tmp:
        (tmp / "w.bin").write_bytes(b"x" * 10)
    assert artifacts.read_manifest(folder, "planner")["files"] == {"w.bin": 10}
    with pytest.raises(artifacts.ArtifactError, match="not a reward_model"):
        artifacts.read_manifest(folder, "reward_model")
    (folder / "w.bin").write_bytes(b"x" * 3)  # truncated after the fact
    with pytest.raises(artifacts.ArtifactError, match="wrong size"):
        artifacts.read_manifest(folder)
    (folder / artifacts.MANIFEST).write_text("{")
    with pytest.raises(artifacts.ArtifactError, match="unreadable"):
        artifacts.read_manifest(folder)
    with pytest.raises(artifacts.ArtifactError, match="no artifact.json"):
        artifacts.read_manifest(tmp_path)


if __name__ == "__main__":  # one kind, every phase, in a process whose torch never threaded
    torch.set_num_threads(1)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kind, out, model_path = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    loaded = (AutoModelForCausalLM.from_pretrained(model_path),
              AutoTokenizer.from_pretrained(model_path), model_path)  # fmt: skip
    print(json.dumps(kill_at_every_phase(kind, out, loaded)))
