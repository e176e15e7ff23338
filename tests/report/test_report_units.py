"""Report building blocks: spec loading and its errors, the four renderers, trainer logs,
and the command's start-up and input errors."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cppo_bench.cli import main
from cppo_bench.errors import DataError
from cppo_bench.report.cppo_runs import find_pipelines, pipeline_gate_log
from cppo_bench.report.model import Cell, Column, Row, Table, note_letter
from cppo_bench.report.render import to_csv, to_html, to_latex, to_markdown
from cppo_bench.report.specs import load_specs
from cppo_bench.store.training_schema import TAU

SHIPPED = {
    "main_pass4", "pipeline_ablation", "reward_ablation", "m_ablation", "k_sweep", "maj4",
    "tokens", "seed_significance", "plan_diversity", "inference_mode", "gain_decomposition",
    "gemma", "diversity_classifier", "order_control", "examples",
}  # fmt: skip


def test_shipped_specs_load_in_order():
    specs = load_specs()
    assert {s.name for s in specs} == SHIPPED
    assert specs[0].name == "main_pass4"
    main_spec = specs[0]
    assert main_spec.significance is not None and main_spec.significance.alpha == 0.05
    assert [r.group for r in main_spec.rows].count("cppo") == 2


def _spec_dir(tmp_path: Path, name: str, text: str) -> Path:
    folder = tmp_path / "specs"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.yaml").write_text(text)
    return folder


def test_override_dir_replaces_adds_and_disables(tmp_path):
    folder = _spec_dir(tmp_path, "main_pass4", "name: main_pass4\ntitle: Mine\nrows: []\n")
    _spec_dir(tmp_path, "maj4", "enabled: false\n")
    _spec_dir(tmp_path, "extra", "name: extra\ntitle: Extra\nrows: [{method: direct}]\n")
    specs = {s.name: s for s in load_specs(folder)}
    assert specs["main_pass4"].title == "Mine" and "maj4" not in specs
    assert specs["extra"].rows[0].label == "direct"  # the label defaults to the method


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: t\ntitle: T\nrows: [{method: direct, metod: x}]\n", "rows[0]: unknown key 'metod'"),
        ("name: t\ntitle: T\nrows: [{label: L}]\n", "rows[0].method: required key missing"),
        ("name: t\ntitle: T\ncolumns: {metrics: [{metric: pass, k: 0}]}\n", "metrics[0].k"),
        ("name: t\ntitle: T\nderive_k: maybe\n", "derive_k: expected bool"),
        ("name: t\ntitle: T\nrows: [{method: d, estimator: biased}]\n", "rows[0].estimator"),
        ("title: T\n", "name: required key missing"),
        ("name: t\ntitle: [unclosed\n", "not valid YAML"),
    ],
)
def test_bad_spec_names_file_and_key(tmp_path, text, message):
    folder = _spec_dir(tmp_path, "bad", text)
    with pytest.raises(DataError) as err:
        load_specs(folder)
    assert str(folder / "bad.yaml") in str(err.value) and message in str(err.value)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/:/bin/sh\n", "a string of 55 characters"),
        ("- secret one\n- secret two\n", "a list of 2 items"),
        ("12345\n", "a number"),
        ("", "nothing"),
    ],
)
def test_a_spec_that_is_not_a_mapping_is_named_by_kind_not_text(tmp_path, text, kind):
    # a spec that is some other file (a link to /etc/passwd, a log): the message says what it
    # is, never prints it
    folder = _spec_dir(tmp_path, "other", text)
    with pytest.raises(DataError) as err:
        load_specs(folder)
    said = str(err.value).split(": top level: ", 1)[1]
    assert said.startswith("expected a mapping") and kind in said
    assert "root" not in said and "secret" not in said and "12345" not in said


def _table() -> Table:
    cols = [
        Column(("Model_1", "APPS", "pass@4"), meta={"model": "m/1", "bench": "apps", "k": 4}),
        Column(("Model_1", "LCB", "pass@4"), meta={"model": "m/1", "bench": "lcb", "k": 4}),
        Column(("Model_2", "APPS", "pass@4"), meta={"model": "m/2", "bench": "apps", "k": 4}),
    ]
    rows = [
        Row(("Direct & co",), [Cell(0.5, 0.1, "problems"), Cell(notes=["no run"]),
                               Cell(0.25, notes=["one seed", "no run"])]),
        Row(("CPPO 50%",), [Cell(0.75, 0.02, "seeds", mark="†", p_value=0.001),
                            Cell(1.0), Cell(interval=(-0.012, 0.058))]),
    ]  # fmt: skip
    return Table("t_1", "Title", "Cap_tion", ("Method",), cols, rows, ["general note"])


def test_footnote_letters():
    assert [note_letter(i) for i in (0, 1, 25, 26, 27)] == ["a", "b", "z", "aa", "ab"]
    assert _table().footnotes() == ["no run", "one seed"]


def test_markdown_marks_empty_cells_with_footnotes():
    md = to_markdown(_table())
    assert "| Model_1 · APPS | Model_1 · LCB | Model_2 · APPS |" in md  # constant level dropped
    assert "*pass@4*" in md
    assert "| Direct & co | 0.500 ± 0.100 | <sup>a</sup> | 0.250<sup>b,a</sup> |" in md
    assert "| CPPO 50% | 0.750 ± 0.020† | 1.000 | [-0.012, 0.058] |" in md
    assert "<sup>a</sup> no run" in md and "general note" in md


def test_latex_is_booktabs_with_grouped_headers_and_escapes():
    tex = to_latex(_table())
    for needle in (r"\toprule", r"\midrule", r"\bottomrule", r"\label{tab:t_1}",
                   r"\multicolumn{2}{c}{Model\_1}", r"\cmidrule(lr){2-3}", r"& Model\_2 \\",
                   r"Direct \& co", r"CPPO 50\%", r"0.750 $\pm$ 0.020$^{\dagger}$",
                   r"\textsuperscript{b,a}", r"Cap\_tion"):  # fmt: skip
        assert needle in tex, needle
    body = tex.split(r"\midrule")[1].split(r"\bottomrule")[0]
    cells = [re.split(r"(?<!\\)&", line) for line in body.strip().splitlines()]
    assert [len(c) for c in cells] == [4, 4]  # row header + 3 columns, escaped & kept inside


def test_csv_is_tidy_and_unrounded():
    rows = list(csv.DictReader(io.StringIO(to_csv(_table()))))
    assert len(rows) == 6
    first = rows[0]
    assert (first["row_method"], first["model"], first["bench"]) == ("Direct & co", "m/1", "apps")
    assert float(first["value"]) == 0.5 and first["spread_over"] == "problems"
    assert rows[1]["value"] == "" and rows[1]["notes"] == "no run"
    assert rows[3]["mark"] == "†" and float(rows[3]["p_value"]) == 0.001
    assert (float(rows[5]["ci_low"]), float(rows[5]["ci_high"])) == (-0.012, 0.058)


def test_html_table_spans_and_escapes():
    html = to_html(_table())
    assert '<th colspan="2">Model_1</th>' in html and '<th rowspan="2"' in html
    assert "Direct &amp; co" in html and '<span class="mark">†</span>' in html
    assert 'title="p = 0.0010' not in html and "p = 0.0010" in html


def test_training_gate_log_schema(tmp_path):
    pipe = tmp_path / "train" / "p"
    for stage in ("sft", "rm"):
        (pipe / stage).mkdir(parents=True)
        (pipe / stage / "train_manifest.json").write_text(
            json.dumps({"kind": "training", "stage": stage})
        )
    (pipeline,) = find_pipelines(tmp_path)
    assert pipeline_gate_log(pipeline) is None  # no scores yet: no log, no figure
    good = [{"gate_prob": 0.9, "label": 1, "passed": True, "split": "heldout"},
            {"gate_prob": 0.2, "label": 0}, {"gate_prob": 0.4, "passed": False}]  # fmt: skip
    scores = pipe / "rm" / "val_scores.jsonl"
    scores.write_text("\n".join(json.dumps(x) for x in good) + "\n\n")
    log = pipeline_gate_log(pipeline)
    assert log.name == "cppo-p" and len(log.records) == 3
    assert [r.gate_prob for r in log.roc_records()] == [0.9]  # held-out rows when any
    assert log.records[0].tau == TAU == 0.17
    scores.write_text('{"gate_prob": 0.5}\n{"gate_prob": 1.5}\n')
    with pytest.raises(
        DataError, match=r"val_scores\.jsonl:2: gate_prob must be a number in \[0, 1\]"
    ):
        pipeline_gate_log(pipeline)
    scores.write_text('{"gate_prob": NaN}\n')
    with pytest.raises(DataError, match=r"val_scores\.jsonl:1: not JSON|gate_prob"):
        pipeline_gate_log(pipeline)


def test_command_starts_without_heavy_imports():
    code = ("import sys; from cppo_bench.cli import main; main.get_command(None, 'report'); "
            "heavy = [m for m in ('matplotlib', 'torch', 'transformers', 'sentence_transformers',"
            " 'cppo_bench.report') if m in sys.modules]; print(heavy)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_command_input_errors_are_one_line(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["report", "--runs", str(tmp_path / "nope")])
    assert result.exit_code == 1 and "no run store here" in result.output
    result = runner.invoke(main, ["report", "--runs", str(tmp_path), "--formats", "md,docx"])
    # checked by ReportConfig (a Python caller meets it too): a user error, status 1
    assert (
        result.exit_code == 1
        and "--formats: [1] 'docx' is not one of md, tex, csv" in result.output
    )
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "x.yaml").write_text("name: x\ntitle: X\nkind: pie\n")
    result = runner.invoke(
        main,
        [
            "report",
            "--runs",
            str(tmp_path),
            "--specs",
            str(tmp_path / "specs"),
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert result.exit_code == 1 and "x.yaml: kind: unknown table kind 'pie'" in result.output
    assert "Traceback" not in result.output


def test_empty_store_is_an_error_and_check_lists_every_run(tmp_path):
    result = CliRunner().invoke(main, ["report", "--runs", str(tmp_path), "--out",
                                       str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code == 1 and "no runs found" in result.output
    check = CliRunner().invoke(main, ["report", "--runs", str(tmp_path), "--check"])
    assert check.exit_code == 1
    # without any run there is no model to name: the commands use the default model
    assert f"cppo-bench run --method direct --bench apps --k 4 --seeds 0 --runs {tmp_path}\n" in (
        check.output
    )


class WordJudge:
    """A judge double: names a category from the member's text (w0 -> DP, w1 -> greedy,
    w2 -> graph, w3 -> "dynamic programming", i.e. DP again); anything else gets a reply
    that names no category. Counts its generate() calls."""

    name = "word-judge"
    model_id = "word-judge"
    calls = 0

    def generate(self, requests, progress=None):
        from cppo_bench.backends.base import GenResult

        WordJudge.calls += 1
        replies = {"w0t": "DP", "w1t": "Category: greedy", "w2t": "graph",
                   "w3t": "dynamic programming"}  # fmt: skip
        out = []
        for req in requests:
            text = req.messages[-1]["content"]
            reply = next((r for key, r in replies.items() if key in text), "no idea")
            out.append(GenResult(text=reply, num_tokens=1, finish_reason="stop"))
        return out


def make_judge(model=None, **_):
    return WordJudge()


def test_d_alg_uses_the_judge_backend(tmp_path):
    from report_plant import plant

    plant(tmp_path / "runs")
    result = CliRunner().invoke(main, ["report", "--runs", str(tmp_path / "runs"), "--out",
                                       str(tmp_path / "out"), "--resamples", "50",
                                       "--judge-backend", "test_report_units:make_judge"])  # fmt: skip
    assert result.exit_code == 0, result.output
    with open(tmp_path / "out" / "tables" / "plan_diversity.csv", newline="") as fh:
        cells = {(r["row_method"], r["model"], r["bench"]): r for r in csv.DictReader(fh)
                 if r["metric"] == "d_alg"}  # fmt: skip
    # planted disjoint plans w0..w3 -> {DP, greedy, graph, DP}: 3 categories of 4
    cppo = cells[("CPPO inference (untrained planner)", "org/ModelA", "apps")]
    assert float(cppo["value"]) == pytest.approx(0.75)
    # identical programs: every reply unparseable -> "other" (counted, footnoted): 1 of 4
    direct = cells[("Direct Solve (programs)", "org/ModelA", "apps")]
    assert float(direct["value"]) == pytest.approx(0.25)
    assert "labelled 'other'" in direct["notes"]
    assert WordJudge.calls > 0
