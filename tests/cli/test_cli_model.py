"""`cppo-bench model path` and `cppo-bench lm-eval` defaulting to the embedded model."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from cppo_bench.cli import main
from cppo_bench.cli.lmeval import needs_default_model, with_default_model


@pytest.fixture
def model_dir(tmp_path, monkeypatch):
    from cppo_bench.backends import default_model

    monkeypatch.setattr(default_model, "ensure_default_model", lambda: tmp_path)
    return tmp_path


def test_model_path_prints_the_embedded_models_folder(model_dir):
    result = CliRunner().invoke(main, ["model", "path"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(model_dir)


@pytest.mark.parametrize(
    ("args", "needed"),
    [
        (["run", "--tasks", "cppo_demo"], True),
        (["--tasks", "cppo_demo"], True),  # lm-eval's legacy form: `run` implied
        (["run", "--model", "hf", "--tasks", "cppo_demo"], True),
        (["run", "--model", "hf", "--model_args", "pretrained=x", "--tasks", "t"], False),
        (["run", "-a", "pretrained=x", "--tasks", "t"], False),
        (["run", "--model", "openai-chat-completions", "--tasks", "t"], False),
        (["ls", "tasks"], False),
        (["run", "--help"], False),
    ],
)
def test_which_lm_eval_calls_get_the_default_model(args, needed):
    assert needs_default_model(args) is needed


def test_lm_eval_without_model_evaluates_the_embedded_model(model_dir, monkeypatch):
    import importlib.util
    import subprocess

    if importlib.util.find_spec("lm_eval") is None:  # the command refuses to start without it
        pytest.skip("needs the lmeval extra: pip install -e '.[lmeval]'")
    calls = []
    monkeypatch.setattr(subprocess, "call", lambda argv: calls.append(argv) or 0)
    result = CliRunner().invoke(main, ["lm-eval", "run", "--tasks", "cppo_demo"])
    assert result.exit_code == 0, result.output
    (argv,) = calls
    assert argv[argv.index("--model") + 1] == "hf"
    assert argv[argv.index("--model_args") + 1] == f"pretrained={model_dir}"
    assert with_default_model(["run", "--model", "vllm"], "/m")[-2:] == [
        "--model_args",
        "pretrained=/m",
    ]
