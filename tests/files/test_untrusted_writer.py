"""Door 3 of docs/untrusted-inputs.md, files written under an output folder: every write
under `--out` goes through `cppo_bench/files/outdir.py` (report, verify, decontam, augment,
and the trainers' run and stage folders) or, for the run store and appended logs,
`cppo_bench/files/fs.py`. The walk (over `cppo_bench/` and `trainers/`) fails on another way
to write; the behaviour tests plant links in `--out` and name outputs that would leave it
(the trainers' own: tests/trainers/test_trainer_writes.py)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from code_walk import dotted as _dotted
from report_plant import N, Plant, _write

from cppo_bench.cli import main
from cppo_bench.files.outdir import OutDir, OutDirError

ROOT = Path(__file__).resolve().parents[2]
DOORS = {"cppo_bench/files/outdir.py", "cppo_bench/files/fs.py"}
WRITE_CALLS = {"shutil.rmtree", "os.replace", "os.rename", "json.dump", "shutil.copy",
               "shutil.copyfile", "shutil.move", "os.mkdir", "os.makedirs", "os.symlink",
               "torch.save", "save_file", "save_tensors", "shutil.copytree", "pickle.dump",
               "np.save", "numpy.save"}  # fmt: skip
WRITE_METHODS = {"write_text", "write_bytes", "mkdir", "unlink", "savefig", "touch",
                 "rename", "replace", "symlink_to",
                 # a library that writes a whole folder (HF, accelerate / DeepSpeed)
                 "save_pretrained", "save_state", "save_checkpoint", "save_model",
                 "save_tensors", "init_trackers"}  # fmt: skip
TREES = ("cppo_bench", "trainers")
# A library that writes a folder itself is handed one that `OutDir.fresh_folder` made (a
# planted link or file at its name refused): `artifacts.prepare` / `saving` for every artifact.
FRESH = "writes into the fresh temporary artifact folder OutDir.fresh_folder made"
# Deliberate exceptions: (file, call) -> why it is not a write under a user's output folder
ALLOWED: dict[tuple[str, str], str] = {
    ("cppo_bench/files/lock.py", "os.rename"): "moves a stale lock aside, O_EXCL-created",
    ("cppo_bench/verifier/cache.py", ".mkdir"): "its own hash-named verdict cache",
    ("cppo_bench/verifier/cache.py", "json.dump"): "its own verdict cache (O_EXCL temp)",
    ("cppo_bench/verifier/cache.py", "os.replace"): "its own verdict cache",
    ("cppo_bench/backends/default_model.py", ".mkdir"): "the model download cache",
    ("cppo_bench/backends/default_model.py", ".write_text"): "the model download marker",
    ("cppo_bench/backends/default_model.py", "shutil.rmtree"): "the model download cache",
    ("cppo_bench/backends/default_model.py", "os.replace"): "the model download cache",
    ("cppo_bench/diversity/semantic.py", ".mkdir"): "the encoder download cache",
    ("cppo_bench/diversity/semantic.py", ".unlink"): "the encoder download cache",
    ("cppo_bench/diversity/semantic.py", ".rename"): "the encoder download cache",
    ("cppo_bench/diversity/semantic.py", "open"): "the encoder cache's private mkdtemp folder",
    ("cppo_bench/backends/default_model.py", ".save_pretrained"): "the model download cache "
    "(its private mkdtemp folder)",
    ("cppo_bench/verifier/inside/child.py", "open"): "the sandboxed child's stdio fds 1 and 2",
    ("cppo_bench/verifier/inside/nsutil.py", "open"): "/proc/self uid/gid maps",
    ("cppo_bench/benchmarks/build_demo_train.py", ".write_text"): "maintainer script: "
    "writes the packaged demo file",
    # trainers: library writers, each into a folder the writer made fresh
    ("trainers/engine/artifacts.py", ".save_pretrained"): "HF " + FRESH,
    ("trainers/engine/artifacts.py", "save_file"): "safetensors " + FRESH,
    ("trainers/engine/checkpoint.py", ".save_state"): "accelerate / DeepSpeed " + FRESH,
    ("trainers/engine/checkpoint.py", ".save_pretrained"): "policy, tokenizer: " + FRESH,
    ("trainers/engine/sharding.py", "save_file"): "FSDP2 full state: " + FRESH,
    ("trainers/engine/loop.py", ".save_state"): "the engine's own checkpoint.save_state",
    ("trainers/engine/loop.py", ".init_trackers"): "tensorboard / wandb write their own folder "
    "under --out, made real first by trackers.tracker_folder (a planted link refused)",
    ("trainers/cppo_pipeline/stage_data.py", ".save_pretrained"): "SFT planner: " + FRESH,
    ("trainers/cppo_pipeline/reward_model.py", ".save_pretrained"): "RM model/: " + FRESH,
    ("trainers/cppo_pipeline/ngram_rm.py", "save_tensors"): "n-gram RM weights: " + FRESH,
}
# the node verifier's rendezvous: a 0700 folder of this user in $TMPDIR (owner and mode
# checked, serve.node._folder), never a user's output folder
_NODE = "the node verifier's private 0700 rendezvous folder (serve.node._folder)"
for _call in (".mkdir", ".unlink", ".write_text", ".replace"):
    ALLOWED[("cppo_bench/serve/node.py", _call)] = _NODE
# the sandbox's own tmpfs / cgroups: exactly the calls each module makes
_SANDBOX = {
    "inside/mounts": ("os.makedirs", "os.mkdir", "os.symlink"),
    "inside/procs": ("shutil.rmtree",),
    "launch": (".mkdir", ".write_text", "os.symlink", "shutil.rmtree"),
    "inside/nsutil": ("os.makedirs", "os.mkdir", "os.symlink"),
    "inside/harness": ("os.makedirs",),
}
for _name, _calls in _SANDBOX.items():
    for _call in _calls:
        ALLOWED[(f"cppo_bench/verifier/{_name}.py", _call)] = "sandbox plumbing"


def writing_calls(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if name in WRITE_CALLS:
            found.append((node.lineno, name))
        elif isinstance(node.func, ast.Attribute) and node.func.attr in WRITE_METHODS:
            target = node.func.value
            if isinstance(target, ast.Call) and _dotted(target.func).endswith("OutDir"):
                continue  # OutDir(folder).write_text(...): the writer itself
            head = name.split(".")[0]
            if head in ("os", "shutil", "out", "outdir", "storefs", "dataclasses"):
                continue  # os.* matched above; an OutDir's own methods; str.replace below
            if node.func.attr == "replace" and len(node.args) != 1:
                continue  # str.replace(a, b), dataclasses.replace(x, **kw)
            found.append((node.lineno, "." + node.func.attr))
        elif name == "open" or name.endswith(".open"):  # open(p, "w"), Path.open("w")
            args = node.args[1:] if name == "open" else node.args[:1]
            mode = next((k.value for k in node.keywords if k.arg == "mode"), None)
            mode = mode if mode is not None else (args[0] if args else None)
            if isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax+"):
                found.append((node.lineno, "open"))
    return found


def test_every_write_under_an_output_folder_goes_through_the_writer() -> None:
    offenders = []
    paths = sorted(p for tree in TREES for p in (ROOT / tree).rglob("*.py"))
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        if rel in DOORS:
            continue
        for line, name in writing_calls(ast.parse(path.read_text(encoding="utf-8"))):
            if (rel, name) not in ALLOWED:
                offenders.append(f"{rel}:{line}: {name}")
    assert not offenders, "write through cppo_bench.files.outdir.OutDir:\n" + "\n".join(offenders)


def test_the_walk_sees_each_way_around() -> None:
    tree = ast.parse("p.write_text(s)\np.mkdir()\nfig.savefig(p)\nshutil.rmtree(p)\n"
                     "open(p, 'w')\nos.replace(a, b)\np.unlink()\n")  # fmt: skip
    assert len(writing_calls(tree)) == 7
    more = ("(d / 'x').open('w')\np.open(mode='a')\nopen(p, mode='w')\ntorch.save(m, p)\n"
            "model.save_pretrained(d)\nacc.save_state(d)\nsave_file(t, p)\n")  # fmt: skip
    assert len(writing_calls(ast.parse(more))) == 7
    assert writing_calls(ast.parse("p.open('rb')\nopen(p)\nos.open(p, flags)\n")) == []
    assert writing_calls(ast.parse("s.replace('a', 'b')\nout.write_text('x', t)\n")) == []


# ONE output file the user names (`verify --out FILE`) goes through `write_user_file`: an
# existing device or FIFO there is written into, never renamed over (as root, a rename over
# /dev/null destroyed it). A command must not split such a path into OutDir(p.parent) + name.
CLI_FILES = ("cppo_bench/cli", "trainers/cli.py")
FILE_OPTIONS = {"--out", "-o", "--output", "--save", "--log", "--export", "--csv-out",
                "--json-out", "--dump"}  # fmt: skip


def _cli_paths() -> list[Path]:
    found: list[Path] = []
    for name in CLI_FILES:
        path = ROOT / name
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return found


def user_file_bypasses(tree: ast.AST) -> list[tuple[int, str]]:
    """OutDir(x.parent) / make_root(x.parent) in a command: a user's file taken apart."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] in (
            "OutDir", "make_root", "check_root"
        ):  # fmt: skip
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Attribute) and arg.attr == "parent":
                found.append((node.lineno, "OutDir(<file>.parent)"))
    return found


def file_output_options(tree: ast.AST) -> list[tuple[int, str]]:
    """click options named like an output that take a path which cannot be a folder."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _dotted(node.func).endswith("click.option")):
            continue
        names = {
            a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        }
        kind = next((k.value for k in node.keywords if k.arg == "type"), None)
        is_file = (
            isinstance(kind, ast.Call)
            and _dotted(kind.func).endswith("Path")
            and any(
                k.arg == "dir_okay" and getattr(k.value, "value", True) is False
                for k in kind.keywords
            )  # fmt: skip
            and not any(
                k.arg == "exists" and getattr(k.value, "value", False) is True
                for k in kind.keywords
            )  # fmt: skip
        )
        if is_file and names & FILE_OPTIONS:
            found.append((node.lineno, "/".join(sorted(names & FILE_OPTIONS))))
    return found


def test_a_file_the_user_names_goes_through_write_user_file() -> None:
    offenders = []
    for path in _cli_paths():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        offenders += [f"{rel}:{line}: {what}" for line, what in user_file_bypasses(tree)]
        if "write_user_file" not in text:
            offenders += [f"{rel}:{line}: option {what} names one output file, but the "
                          "module never calls write_user_file"
                          for line, what in file_output_options(tree)]  # fmt: skip
    assert not offenders, "write it with cppo_bench.files.outdir.write_user_file:\n" + "\n".join(
        offenders
    )


def test_the_user_file_walk_sees_a_way_around() -> None:
    assert len(user_file_bypasses(ast.parse("OutDir(out.parent).write_text(out.name, t)"))) == 1
    assert user_file_bypasses(ast.parse("OutDir(out).write_text('a', t)")) == []
    opt = "@click.option('--out', type=click.Path(dir_okay=False, path_type=Path))\ndef f(): ..."
    assert len(file_output_options(ast.parse(opt))) == 1
    read = "@click.option('--out', type=click.Path(exists=True, dir_okay=False))\ndef f(): ..."
    assert file_output_options(ast.parse(read)) == []  # an input file, however it is named
    assert len(file_output_options(ast.parse((ROOT / "cppo_bench/cli/verify.py").read_text()))) == 1


# --- behaviour ------------------------------------------------------------------------------


def _one_run(runs: Path) -> None:
    _write(runs, Plant("direct", "m", "demo", 0, [[True] * 4] * N, planner=[0] * N,
                       solver=[0] * N))  # fmt: skip


def test_report_never_writes_through_planted_links(tmp_path: Path) -> None:
    runs, out, victim = tmp_path / "runs", tmp_path / "out", tmp_path / "victim.txt"
    _one_run(runs)
    out.mkdir()
    victim.write_text("keep me\n")
    names = ("index.html", "report.md", "missing.md", "fill_missing.sh")
    for name in names:
        (out / name).symlink_to(victim)
    result = CliRunner().invoke(main, ["report", "--runs", str(runs), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert victim.read_text() == "keep me\n"
    for name in names:  # each link was replaced by the report's own file
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 0


def test_report_refuses_a_linked_subfolder(tmp_path: Path) -> None:
    runs, out, elsewhere = tmp_path / "runs", tmp_path / "out", tmp_path / "elsewhere"
    _one_run(runs)
    out.mkdir()
    elsewhere.mkdir()
    (out / "tables").symlink_to(elsewhere)
    result = CliRunner().invoke(main, ["report", "--runs", str(runs), "--out", str(out)])
    assert result.exit_code == 1
    assert "symbolic link" in result.output and "Traceback" not in result.output
    assert list(elsewhere.iterdir()) == []


def test_a_spec_named_to_leave_the_folder_is_refused(tmp_path: Path) -> None:
    runs, out, specs = tmp_path / "runs", tmp_path / "a" / "b" / "out", tmp_path / "specs"
    _one_run(runs)
    specs.mkdir()
    (specs / "evil.yaml").write_text(
        "name: ../../x\ntitle: t\nkind: passk\ncolumns: []\nrows: []\n"
    )
    result = CliRunner().invoke(
        main, ["report", "--runs", str(runs), "--out", str(out), "--specs", str(specs)]
    )
    assert result.exit_code == 1, result.output
    assert "evil.yaml: name '../../x'" in result.output
    assert not (tmp_path / "a" / "x.md").exists() and not list(tmp_path.rglob("x.*"))


@pytest.mark.parametrize("rel", ["../x", "/etc/passwd", "a/../../x", "", "a\nb", "a/./b/.."])
def test_outdir_names_never_leave(tmp_path: Path, rel: str) -> None:
    with pytest.raises(OutDirError):
        OutDir(tmp_path / "out").write_text(rel, "x")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("kind", ["dangling", "file", "fifo"])
def test_out_that_is_not_a_folder_is_one_line(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out"
    if kind == "dangling":
        out.symlink_to(tmp_path / "missing")
    elif kind == "file":
        out.write_text("")
    else:
        os.mkfifo(out)
    with pytest.raises(OutDirError) as err:
        OutDir(out)
    assert str(err.value).startswith(f"{out}: ") and "\n" not in str(err.value)
    from cppo_bench.files.fs import StoreLinkError, make_dirs

    with pytest.raises(StoreLinkError):  # the run store's root: the same refusal
        make_dirs(out, out / "demo")


def test_training_logs_never_append_through_a_planted_link(tmp_path: Path) -> None:
    """`train --resume` of a stranger's run folder: a metrics.jsonl linked to a file outside
    was appended to (the engine opened it with a plain "a"). One line; the target is kept."""
    from cppo_bench.errors import DataError
    from trainers.engine.metrics import MetricsLog

    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").symlink_to(victim)
    with pytest.raises(DataError, match="symbolic link"):
        MetricsLog(run, True).write({"step": 1})
    assert victim.read_text() == "keep\n"


def test_streamed_writes_are_all_or_nothing(tmp_path: Path) -> None:
    """`OutDir.writing` (the trainers' large JSONL files): an error mid-file leaves the old
    file and no temporary file; a link at the name is replaced, its target kept."""
    out, victim = OutDir(tmp_path / "out"), tmp_path / "victim.txt"
    victim.write_text("keep\n")
    out.write_text("a.jsonl", "old\n")
    with pytest.raises(RuntimeError), out.writing("a.jsonl") as fh:
        fh.write("half")
        raise RuntimeError
    assert (out.root / "a.jsonl").read_text() == "old\n"
    assert sorted(p.name for p in out.root.iterdir()) == ["a.jsonl"]
    (out.root / "b.jsonl").symlink_to(victim)
    with out.writing("b.jsonl") as fh:
        fh.write("new\n")
    assert victim.read_text() == "keep\n" and (out.root / "b.jsonl").read_text() == "new\n"


@pytest.mark.parametrize("planted", ["link", "file", "dangling"])
def test_a_fresh_folder_refuses_what_is_planted_at_its_name(tmp_path: Path, planted: str) -> None:
    out, elsewhere = OutDir(tmp_path / "out"), tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = out.root / ".tmp-x"
    if planted == "link":
        path.symlink_to(elsewhere)
    elif planted == "dangling":
        path.symlink_to(tmp_path / "missing")
    else:
        path.write_text("")
    with pytest.raises(OutDirError) as err:
        out.fresh_folder(".tmp-x")
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)
    assert list(elsewhere.iterdir()) == [] and not (tmp_path / "missing").exists()


@pytest.mark.parametrize("target", ["../x", "/etc", "a/b", ""])
def test_a_link_points_only_at_a_sibling(tmp_path: Path, target: str) -> None:
    with pytest.raises(OutDirError):
        OutDir(tmp_path / "out").link("final", target)


def test_a_folder_planted_at_a_file_name_is_one_line(tmp_path: Path) -> None:
    out = OutDir(tmp_path / "out")
    (out.root / "audit.json").mkdir()
    with pytest.raises(OutDirError, match="audit.json: cannot write"):
        out.write_text("audit.json", "{}")
    assert sorted(p.name for p in out.root.iterdir()) == ["audit.json"]


def test_every_allowed_write_is_still_in_the_code() -> None:
    """An exception that no longer matches a call is a door left open for the next one."""
    used = {
        (path.relative_to(ROOT).as_posix(), name)
        for tree in TREES
        for path in (ROOT / tree).rglob("*.py")
        for _, name in writing_calls(ast.parse(path.read_text(encoding="utf-8")))
    }
    stale = sorted(f"{f}: {c}" for f, c in ALLOWED if (f, c) not in used)
    assert not stale, "remove these exceptions:\n" + "\n".join(stale)
