"""Door 2 of docs/untrusted-inputs.md, files read from strangers: `cppo_bench/files/userfiles.py`
is the one reader of user-named paths (the run store's own files go through
`cppo_bench/files/fs.py`, which applies the same checks plus O_NOFOLLOW). The walk fails on
any other way to read a file (exceptions listed with the reason); the behaviour tests feed
FIFOs, devices, links to /dev/zero and oversized files to the reader and to the commands
that take a path, and bound the memory each one costs (ru_maxrss of a fresh process)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from code_walk import dotted as _dotted

# the trainers too: they read strangers' run folders (`train --resume`, a model folder)
from code_walk import sources as _sources

from cppo_bench.errors import DataError
from cppo_bench.files import userfiles

ROOT = Path(__file__).resolve().parents[2]
DOORS = {
    "cppo_bench/files/userfiles.py",
    "cppo_bench/files/fs.py",
    "cppo_bench/files/outdir.py",
}  # doors
READ_CALLS = {"open", "io.open", "json.load", "pd.read_csv", "pd.read_json", "pd.read_parquet",
              "pq.ParquetFile", "pq.read_table", "datasets.load_from_disk", "yaml.load", "yaml.safe_load", "yaml.full_load", "yaml.load_all", "yaml.safe_load_all",
              "yaml.compose", "yaml.parse",
              "yaml.unsafe_load", "pickle.load", "np.load", "numpy.load", "torch.load",
              "os.fdopen", "os.open"}  # fmt: skip
READ_METHODS = {"read_text", "read_bytes", "open"}
# Deliberate exceptions: (file, call) -> why it is not a stranger's file
ALLOWED: dict[tuple[str, str], str] = {
    ("cppo_bench/files/lock.py", "open"): "/proc/<pid>/stat of a lock holder (the kernel's)",
    ("cppo_bench/files/lock.py", "os.open"): "creates its own lock file (O_EXCL|O_NOFOLLOW)",
    ("cppo_bench/files/lock.py", "os.fdopen"): "its own lock file, opened above",
    ("cppo_bench/api/doctor.py", ".read_text"): "/proc and /sys knobs of this machine",
    ("cppo_bench/verifier/inside/mounts.py", "open"): "/proc/self/mountinfo",
    ("cppo_bench/verifier/inside/procs.py", "open"): "/proc/<pid> files of sandboxed processes",
    ("cppo_bench/verifier/inside/warm.py", "open"): "/proc/<pid>/status of a kept test child",
    ("cppo_bench/verifier/cpus.py", "open"): "/proc/self/status",
    ("cppo_bench/serve/sandboxes.py", "open"): "/proc/<pid>/task/*/children of the server",
    ("cppo_bench/verifier/cpus.py", "os.open"): "its own CPU-slot lock files",
    ("cppo_bench/verifier/cpus.py", "os.fdopen"): "its own CPU-slot lock files",
    ("cppo_bench/verifier/inside/nsutil.py", "open"): "/proc/self uid/gid maps it writes",
    ("cppo_bench/verifier/inside/child.py", "open"): "the sandboxed child's stdio fds 0/1/2",
    ("cppo_bench/verifier/launch.py", ".read_text"): "the package's own launcher source",
    ("cppo_bench/verifier/cache.py", ".read_text"): "its own result cache (hash-named)",
    ("cppo_bench/verifier/cache.py", "os.fdopen"): "its own result cache, written O_EXCL",
    ("cppo_bench/verifier/inside/zygote.py", "os.open"): "/proc fds of its own children",
    ("cppo_bench/verifier/inside/serversetup.py", "open"): "/proc/<pid>/status of its zygotes",
    ("cppo_bench/report/specs.py", ".read_text"): "specs shipped in the package (a user's "
    "--specs file goes through read_yaml)",
    ("cppo_bench/report/html.py", ".read_bytes"): "a figure PNG the report just drew",
    ("cppo_bench/diversity/semantic.py", ".open"): "joins its own downloaded model parts",
    ("cppo_bench/diversity/semantic.py", "open"): "its own downloaded model parts",
    ("cppo_bench/backends/default_model.py", ".read_text"): "its own download marker",
    ("cppo_bench/store/frames.py", "pd.read_csv"): "parses the stream userfiles.open_bytes opened",
    ("cppo_bench/benchmarks/_io.py", "pq.ParquetFile"): "after userfiles.check(path) said it is "
    "a regular file; pyarrow reads it in batches",
    ("cppo_bench/benchmarks/_io.py", "datasets.load_from_disk"): "a save_to_disk folder, "
    "memory-mapped by datasets (a folder: no FIFO reaches it)",
}
# the trainers: what they write into their own run folder (an append or a "w" open is no read
# of a stranger's file), and the few reads that are not a stranger's bytes
_OWN = "writes (or fsyncs) a file of the training run's own --out folder"
ALLOWED.update({
    ("trainers/engine/artifacts.py", ".open"): _OWN + " (fsync of a file it just wrote)",
    ("trainers/engine/artifacts.py", "os.open"): _OWN + " (its temp files and folders)",
    ("trainers/engine/deepspeed_support.py", "torch.load"): "weights_only after the state's "
    "every pickle was checked by torch's restricted unpickler",
})  # fmt: skip
# the sandbox's own plumbing: /proc, /dev, cgroup and mount files of the machine it runs on
for _sandbox in (
    "inside/child",
    "inside/harness",
    "inside/mounts",
    "inside/nsutil",
    "inside/procs",
    "inside/reset",
):
    ALLOWED[(f"cppo_bench/verifier/{_sandbox}.py", "os.open")] = "sandbox plumbing (/proc, /dev)"
ALLOWED[("cppo_bench/verifier/launch.py", "os.open")] = "the memory cgroup's own control files"


def reading_calls(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        if name in READ_CALLS:
            found.append((node.lineno, name))
        elif isinstance(node.func, ast.Attribute) and node.func.attr in READ_METHODS:
            # path.read_text(), path.open("rb"): a method of a path (not os.open / io.open,
            # matched above, nor urllib / webbrowser opens of URLs)
            if name.split(".")[0] not in (
                "os",
                "io",
                "urllib",
                "webbrowser",
                "userfiles",
                "storefs",
            ):
                found.append((node.lineno, "." + node.func.attr))
    return found


def test_every_read_of_a_path_goes_through_the_reader() -> None:
    offenders = []
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel in DOORS:
            continue
        for line, name in reading_calls(ast.parse(path.read_text(encoding="utf-8"))):
            if (rel, name) not in ALLOWED:
                offenders.append(f"{rel}:{line}: {name}")
    assert not offenders, "read through cppo_bench.files.userfiles:\n" + "\n".join(offenders)


def test_the_walk_sees_each_way_around() -> None:
    tree = ast.parse("open(p)\np.read_text()\np.read_bytes()\njson.load(f)\n"
                     "yaml.safe_load(s)\np.open('rb')\npickle.load(f)\n")  # fmt: skip
    assert len(reading_calls(tree)) == 7
    assert reading_calls(ast.parse("userfiles.read_text(p)\nos.path.exists(p)\n")) == []


# --- behaviour ------------------------------------------------------------------------------


@pytest.fixture()
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "problems.jsonl"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("reader", [userfiles.read_bytes, userfiles.read_text,
                                    userfiles.read_json, userfiles.read_yaml,
                                    lambda p: list(userfiles.lines(p))])  # fmt: skip
def test_fifo_device_and_dev_zero_link_are_one_line(reader, fifo: Path, tmp_path: Path) -> None:
    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")
    for path, kind in ((fifo, "a FIFO"), (Path("/dev/null"), "a character device"),
                       (link, "a character device"), (tmp_path, "a directory")):  # fmt: skip
        with pytest.raises(DataError) as err:
            reader(path)
        assert str(err.value).startswith(f"{path}: is {kind}"), err.value
        assert "\n" not in str(err.value)


def test_size_is_checked_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "input_output.json"
    with open(big, "wb") as fh:  # sparse: 2 GiB that cost no disk
        fh.truncate(2 << 30)
    with pytest.raises(DataError, match=r"input_output.json: 2147483648 bytes, larger than"):
        userfiles.read_text(big)


def test_yaml_aliases_are_refused(tmp_path: Path) -> None:
    spec = tmp_path / "bomb.yaml"
    rows = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    rows += [f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}" + f",*{chr(97 + i)}" * 8 + "]"
             for i in range(8)]  # fmt: skip
    spec.write_text("\n".join(rows) + "\n")
    assert spec.stat().st_size < 1024
    with pytest.raises(DataError, match=r"bomb.yaml:2: not valid YAML \(aliases"):
        userfiles.read_yaml(spec)


def test_long_line_is_skipped_without_being_held(tmp_path: Path) -> None:
    """A line past the cap is named and skipped; the peak RSS of a fresh process reading a
    64 MiB line with an 8 MiB cap stays far below the line (it is never held whole)."""
    path = tmp_path / "long.jsonl"
    with open(path, "wb") as fh:
        fh.write(b'{"a": 1}\n' + b'"' + b"x" * (64 << 20) + b'"\n' + b'{"b": 2}\n')
    code = (
        "import resource, sys\nfrom cppo_bench.files import userfiles\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        f"out = [(ln.lineno, ln.text, ln.error) for ln in userfiles.lines({str(path)!r}, 8 << 20)]\n"
        "print(out)\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)  # fmt: skip
    listing, rss_kb = proc.stdout.splitlines()  # ru_maxrss: KiB on Linux
    assert (
        "(2, None, 'longer than 8388608 bytes')" in listing
        and "(3, '{\"b\": 2}\\n', None)" in listing
    )
    # bound: the 8 MiB cap plus a chunk, never the 64 MiB line
    assert int(rss_kb) < 24 << 10, f"peak RSS grew {int(rss_kb) >> 10} MiB for a 64 MiB line"


def test_benchmark_loader_names_a_fifo(fifo: Path) -> None:
    from cppo_bench.benchmarks import load_benchmark

    with pytest.raises(DataError, match="is a FIFO"):
        load_benchmark("demo", data=str(fifo))


@pytest.mark.parametrize("layout", ["data folder", "apps problem folder"])
def test_a_fifo_inside_a_data_folder_is_named_not_skipped(layout: str, tmp_path: Path) -> None:
    """A FIFO named like data (a data folder's test.jsonl, a problem folder's question.txt)
    was left out in silence: the folder then looked empty or short. It is named instead."""
    from cppo_bench.benchmarks import load_benchmark

    if layout == "data folder":
        os.mkfifo(tmp_path / "test.jsonl")
    else:
        problem = tmp_path / "test" / "0001"
        problem.mkdir(parents=True)
        os.mkfifo(problem / "question.txt")
        (problem / "input_output.json").write_text("{}")
    try:  # a data file refuses the load; a problem folder is a record skipped with its reason
        result = load_benchmark("apps", data=str(tmp_path))
    except DataError as exc:
        assert "is a FIFO" in str(exc)
    else:
        assert not result.problems and "is a FIFO" in result.errors[0].reason


@pytest.mark.parametrize("planted", ["state/step-00000001/artifact.json", "state/LATEST"])
def test_a_fifo_in_a_strangers_training_folder_is_one_line(planted: str, tmp_path: Path) -> None:
    """`train --resume` of a stranger's run folder: a FIFO planted as an artifact manifest
    hung the reader (open() of a FIFO waits for a writer). Run in a child with a time-out so
    the old code fails instead of hanging the suite."""
    out = tmp_path / "run"
    (out / "state" / "step-00000001").mkdir(parents=True)
    if planted.endswith("LATEST"):
        os.mkfifo(out / planted)
    else:
        (out / "state" / "LATEST").write_text("step-00000001")
        os.mkfifo(out / planted)
    code = (
        "import sys\nfrom trainers.engine import checkpoint\n"
        "try:\n    checkpoint.latest_state(sys.argv[1])\n"
        "except ValueError as exc:\n    print('refused:', exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True,
                            text=True, timeout=60, cwd=ROOT)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.startswith("refused:")
        and "FIFO" in result.stdout
        or ("not a plain file" in result.stdout)
    ), result.stdout


def test_problem_jsonl_reader_streams(tmp_path: Path) -> None:
    from cppo_bench.problem import load_problem_jsonl

    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"x": 1}) + "\n")
    result = load_problem_jsonl(path)
    assert result.errors and not result.problems


def test_every_allowed_read_is_still_in_the_code() -> None:
    """An exception that no longer matches a call is a door left open for the next one."""
    used = {
        (path.relative_to(ROOT).as_posix(), name)
        for path in _sources()
        for _, name in reading_calls(ast.parse(path.read_text(encoding="utf-8")))
    }
    stale = sorted(f"{f}: {c}" for f, c in ALLOWED if (f, c) not in used)
    assert not stale, "remove these exceptions:\n" + "\n".join(stale)
