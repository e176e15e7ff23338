"""`cppo-bench model path` and `cppo-bench lm-eval` defaulting to the embedded model."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from cppo_bench.api.lmeval import needs_default_model, with_default_model
from cppo_bench.cli import main


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


def test_lm_eval_api_from_a_config_and_from_arguments(model_dir, monkeypatch):
    import importlib.util
    import subprocess

    from cppo_bench.api import build_config
    from cppo_bench.api.lmeval import LmEvalConfig, lm_eval
    from cppo_bench.errors import DataError

    if importlib.util.find_spec("lm_eval") is None:
        pytest.skip("needs the lmeval extra: pip install -e '.[lmeval]'")
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "call", lambda argv: calls.append(argv) or 3)
    notes: list[str] = []
    config = build_config(LmEvalConfig, {"args": ["ls", "tasks"]})
    assert lm_eval(config, on_note=notes.append) == 3  # the child's own exit status
    assert lm_eval(["ls", "tasks"]) == 3 and calls[0] == calls[1] and notes == []
    assert calls[0][-4:] == ["ls", "tasks", "--include_path", calls[0][-1]]
    lm_eval(["run", "--tasks", "cppo_demo"], on_note=notes.append)
    assert notes == [f"lm-eval: no model named; evaluating the embedded model {model_dir}"]
    with pytest.raises(DataError) as err:  # a bad setting: one line naming it
        lm_eval(LmEvalConfig(args=("run", "--include_path", "x")))
    assert "include_path" in str(err.value) and len(calls) == 3
    with pytest.raises(DataError, match="setting args"):
        build_config(LmEvalConfig, {"args": "run"})
