"""Paths inside strangers' files (docs/untrusted-inputs.md): a value read from a file that
names another file (a manifest's `method_options.prompt_version`, its `data_source`, an
artifact's file list, a training state's `state/LATEST`) is resolved by ONE resolver,
`userfiles.inside`, and must stay inside the root it is meant for after links and `..`;
YAML anywhere is parsed by ONE loader, `userfiles.load_yaml`, that refuses aliases. The
walk fails on code that builds a path from such a field without the resolver, or parses
YAML another way."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from code_walk import dotted, sources
from run_scripted import ScriptedBackend, invoke

import cppo_bench as cb
from cppo_bench.benchmarks import load_benchmark
from cppo_bench.files import userfiles
from cppo_bench.store.runs import MANIFEST, iter_runs

ROOT = Path(__file__).resolve().parents[2]
# fields of a stored document whose value names a file (schema.py, artifacts.py)
FILE_FIELDS = {"data_source", "prompt_version"}
PATH_CALLS = {"Path", "open", "os.path.join", "os.path.exists", "os.stat", "os.lstat",
              "load_result", "load_benchmark"}  # fmt: skip
PATH_METHODS = {"joinpath", "exists", "is_file", "is_dir", "read_text", "read_bytes", "open"}
RESOLVERS = {"inside", "stored_data", "source_of", "reload_args", "userfiles.inside"}
# the resolvers themselves: a run's data outside the roots is read there only to compare its
# bytes with the hash the run recorded (rundata.source_of)
DOORS = {
    "cppo_bench/files/userfiles.py",
    "cppo_bench/store/datasource.py",
    "cppo_bench/runner/rundata.py",
}


def _names_field(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in FILE_FIELDS:
            return True
        if isinstance(sub, ast.Constant) and sub.value in FILE_FIELDS:
            return True
        if isinstance(sub, ast.Call) and dotted(sub.func).split(".")[-1] in RESOLVERS:
            return False  # resolved: what comes out is inside its root
    return False


def path_from_field(tree: ast.AST) -> list[int]:
    """Lines that make or open a path from a file-naming field without the resolver."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = dotted(node.func)
            if name.split(".")[-1] in RESOLVERS:
                continue
            method = isinstance(node.func, ast.Attribute) and node.func.attr in PATH_METHODS
            if name in PATH_CALLS or method:
                parts = [*node.args, *(k.value for k in node.keywords)]
                if method:
                    parts.append(node.func.value)  # type: ignore[attr-defined]
                if any(_names_field(a) for a in parts):
                    found.append(node.lineno)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            if _names_field(node.right):
                found.append(node.lineno)
    return sorted(set(found))


def test_no_path_is_made_from_a_file_naming_field_without_the_resolver() -> None:
    offenders = []
    for path in sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel in DOORS:
            continue
        for line in path_from_field(ast.parse(path.read_text(encoding="utf-8"))):
            offenders.append(f"{rel}:{line}")
    assert not offenders, "resolve it with userfiles.inside:\n" + "\n".join(offenders)


def test_the_walk_sees_each_way_around() -> None:
    code = textwrap.dedent("""
        Path(m.data_source).exists()
        root / manifest.method_options["prompt_version"]
        resources.files("x").joinpath(opts.prompt_version)
        load_result(m.bench, m.data_source)
        os.path.join(base, doc.get("prompt_version"))
    """)
    assert len(path_from_field(ast.parse(code))) == 5
    fine = "stored_data(m.data_source, m.bench)\ninside(root, m.prompt_version, 'x')\n"
    assert path_from_field(ast.parse(fine)) == []


def test_yaml_is_parsed_by_the_one_loader_only() -> None:
    offenders = []
    for path in sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel == "cppo_bench/files/userfiles.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and dotted(node.func).startswith("yaml."):
                offenders.append(f"{rel}:{node.lineno}: {dotted(node.func)}")
            if isinstance(node, ast.Attribute) and node.attr in ("SafeLoader", "CSafeLoader"):
                offenders.append(f"{rel}:{node.lineno}: a loader of its own")
    assert not offenders, "parse YAML with userfiles.load_yaml:\n" + "\n".join(offenders)


# -- the resolver ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["/proc/self/cwd/secret.yaml", "../secret.yaml", "a/../../secret.yaml", "/etc/hostname",
     "link-out/secret.yaml", "", "x\0y", 7, None],
)  # fmt: skip
def test_inside_refuses_a_name_that_leaves_its_root(tmp_path, monkeypatch, name):
    root = tmp_path / "root"
    (root / "ok").mkdir(parents=True)
    (tmp_path / "secret.yaml").write_text("s: 1\n")
    (root / "link-out").symlink_to(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(userfiles.UserFileError) as e:
        userfiles.inside(root, name, "prompt version")
    assert "\n" not in str(e.value) and len(str(e.value)) < 600
    assert userfiles.inside(root, "ok/../ok", "x") == (root / "ok").resolve()


def test_a_long_bad_value_is_quoted_clipped(tmp_path):
    with pytest.raises(userfiles.UserFileError) as e:
        userfiles.inside(tmp_path, "../" * 1_000_000, "data")
    assert len(str(e.value)) < 600 and "more)" in str(e.value)


# -- YAML -----------------------------------------------------------------------------------

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    "text",
    [BOMB, "a: &x 1\nb: *x\n", "- " * 5000 + "x\n", "!!python/object/apply:os.system [id]\n"],
)
def test_the_one_loader_refuses_aliases_depth_and_tags(text):
    assert len(BOMB) < 1024
    with pytest.raises(userfiles.UserFileError) as e:
        userfiles.load_yaml(text, "spec.yaml")
    assert str(e.value).startswith("spec.yaml") and "\n" not in str(e.value)


# -- the commands ---------------------------------------------------------------------------


@pytest.fixture
def stored(tmp_path):
    demo = load_benchmark("demo").problems
    cb.run("direct", "demo", backend=ScriptedBackend(demo), k=2, limit=2, out=tmp_path / "runs")
    (run_dir,) = iter_runs(tmp_path / "runs")
    return run_dir


def _set(run_dir: Path, **fields) -> None:
    doc = json.loads((run_dir / MANIFEST).read_text())
    for key, value in fields.items():
        if key == "prompt_version":
            doc["method_options"]["prompt_version"] = value
        else:
            doc[key] = value
    (run_dir / MANIFEST).write_text(json.dumps(doc))


@pytest.mark.parametrize("how", ["proc", "dotdot", "absolute", "link"])
def test_samples_never_reads_a_prompt_outside_the_package(tmp_path, stored, how):
    # the stranger's "prompt": a working template beside the run, reached four ways
    from cppo_bench import prompts

    package = Path(prompts.__file__).parent
    (tmp_path / "direct.yaml").write_text('user: "STRANGER ${statement}"\n')
    (tmp_path / "fragments.yaml").write_bytes((package / "v2" / "fragments.yaml").read_bytes())
    if how == "link":  # a link in the package's own folder would need write access there:
        pytest.skip("the package folder is not ours to plant in") if not os.access(
            package, os.W_OK
        ) else None
    version = {
        "proc": "/proc/self/cwd",
        "dotdot": os.path.relpath(tmp_path, package),
        "absolute": str(tmp_path),
        "link": "v-planted-link",
    }[how]
    if how == "link":
        (package / version).symlink_to(tmp_path)
    try:
        _set(stored, prompt_version=version)
        code = "import sys, cppo_bench as cb\nprint(cb.samples(sys.argv[1])[0])\n"
        out = subprocess.run([sys.executable, "-c", code, str(stored)], capture_output=True,
                             text=True, timeout=300, cwd=tmp_path)  # fmt: skip
    finally:
        if how == "link":
            (package / version).unlink()
    assert out.returncode == 0, out.stderr[-2000:]
    assert "STRANGER" not in out.stdout and "'prompt_kind': 'statement'" in out.stdout


def test_a_stored_data_source_outside_the_folder_is_not_followed(tmp_path, stored, monkeypatch):
    secret = tmp_path / "elsewhere" / "secret.jsonl"
    secret.parent.mkdir()
    secret.write_text('{"not": "a benchmark"}\n')
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    from cppo_bench.store.datasource import stored_data

    for name in (
        str(secret),
        "../elsewhere/secret.jsonl",
        f"/proc/self/cwd/../elsewhere/{secret.name}",
    ):
        path, why = stored_data(name, "demo")
        assert path is None and "outside" in why
    (work / "mine.jsonl").write_text("{}\n")
    assert stored_data("mine.jsonl", "demo")[0] == (work / "mine.jsonl").resolve()
    _set(stored, data_source=str(secret))
    out = invoke(["samples", "--run", str(stored)])
    assert out.exit_code == 0 and "not a benchmark" not in out.output


def test_a_link_in_the_folder_pointing_out_is_not_followed(tmp_path, monkeypatch):
    # found by trying: the package root was tried second and ended the search with no reason
    from cppo_bench.store.datasource import stored_data

    (tmp_path / "secret").write_text("s\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.jsonl").symlink_to(tmp_path / "secret")
    monkeypatch.chdir(work)
    path, why = stored_data("data.jsonl", "demo")
    assert path is None and "outside" in why


def test_a_recorded_data_path_outside_the_roots_is_followed_only_with_its_bytes(
    tmp_path, monkeypatch
):
    """`extra.data.path` names a file: outside the folder the command runs in, a stranger's
    manifest naming one of your files is not followed unless it records that file's sha256
    (then it reveals nothing it did not hold); a wrong hash is one line, never the content."""
    import hashlib
    from types import SimpleNamespace

    from cppo_bench.errors import DataError
    from cppo_bench.runner.rundata import source_of

    secret = tmp_path / "elsewhere" / "secret.jsonl"
    secret.parent.mkdir()
    secret.write_text('{"private": 1}\n')
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)

    def manifest(**data):
        return SimpleNamespace(extra={"data": {"path": str(secret), **data}},
                               data_source=str(secret), bench="demo")  # fmt: skip

    src = source_of(manifest())
    assert src.data is None and "secret.jsonl" in src.note
    right = hashlib.sha256(secret.read_bytes()).hexdigest()
    assert source_of(manifest(file_sha256=right)).data == str(secret)
    with pytest.raises(DataError, match="changed since") as err:
        source_of(manifest(file_sha256="0" * 64))
    assert "private" not in str(err.value)
    fifo = tmp_path / "elsewhere" / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(DataError):  # never opened: a FIFO has no sha256 to match
        source_of(SimpleNamespace(extra={"data": {"path": str(fifo), "file_sha256": right}},
                                  data_source="demo", bench="demo"))  # fmt: skip
