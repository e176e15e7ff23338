"""The one JSON parser, `cppo_bench/files/jsonio.py` (`loads`, `loads_counted`): every text
from elsewhere (a file, an HTTP body or reply, a model's answer) is parsed there, so a reply
nested 100 000 levels deep, bytes that are not UTF-8 or an object that names a key twice are
one ValueError line, never a RecursionError traceback and never a value that one reader takes
from the first key and another from the last. The walk fails on any other `json.loads` /
`json.load` / JSONDecoder in the harness or the trainers (exceptions listed with the reason);
the behaviour tests attack the parser and the commands that read a server's reply."""

from __future__ import annotations

import ast
import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from code_walk import dotted, sources

from cppo_bench.files import jsonio
from cppo_bench.files.userfiles import UserFileError, load_yaml

ROOT = Path(__file__).resolve().parents[2]
PARSE_CALLS = {"json.loads", "json.load", "json.JSONDecoder", "json.decoder.JSONDecoder"}
_TEST_DATA = (
    "a test's input or expected output, parsed as the official APPS / LiveCodeBench checkers "
    "parse it (json.loads, the last of a repeated key wins), so verdicts agree with theirs"
)
# Deliberate exceptions: (file, call) -> why the text is not a stranger's, or must be parsed so
ALLOWED: dict[tuple[str, str], str] = {
    ("cppo_bench/files/jsonio.py", "json.loads"): "the parser itself",
    ("cppo_bench/files/lock.py", "json.loads"): "its own lock file (written by this tool)",
    ("cppo_bench/verifier/cpus.py", "json.loads"): "its own CPU placement registry",
    ("cppo_bench/verifier/cache.py", "json.loads"): "its own result cache (hash-named)",
    ("cppo_bench/util/keyvals.py", "json.loads"): "the user's own KEY=VALUE on the command "
    "line (a value that is not JSON is kept as text)",
    ("cppo_bench/lm_eval_tasks/scoring.py", "json.loads"): "a verdict the task's own filter "
    "wrote in this process",
    ("cppo_bench/lm_eval_tasks/docs.py", "json.loads"): "loader options the task's own docs wrote",
    ("cppo_bench/verifier/pool.py", "json.loads"): _TEST_DATA,
    ("cppo_bench/verifier/runner.py", "json.loads"): _TEST_DATA,
    ("cppo_bench/verifier/inside/child.py", "json.loads"): _TEST_DATA,
    ("cppo_bench/augment/execute.py", "json.loads"): _TEST_DATA,
    ("cppo_bench/augment/mutate_call.py", "json.loads"): _TEST_DATA,
    ("cppo_bench/verifier/decode.py", "json.loads"): "a program's status frame: capped in "
    "bytes and nodes before parsing, any failure is the CORRUPT verdict (tests/verifier)",
    ("cppo_bench/verifier/sandbox.py", "json.loads"): "the sandbox wire's frame head: capped "
    "at 1 MiB, any failure is 'malformed reply from the sandbox'",
    ("cppo_bench/verifier/inside/wire.py", "json.loads"): "the sandbox wire, harness side",
    ("cppo_bench/verifier/inside/zygote.py", "json.loads"): "the sandbox wire, harness side",
    ("cppo_bench/verifier/inside/serversetup.py", "json.loads"): "the sandbox wire, harness side",
    ("trainers/engine/manifest.py", "json.loads"): "a round trip of its own config (json.dumps "
    "just before)",
    ("trainers/cppo_pipeline/stages.py", "json.loads"): "a round trip of its own config "
    "(json.dumps just before)",
}


def parsing_calls(tree: ast.AST) -> list[tuple[int, str]]:
    return [
        (node.lineno, name)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and (name := dotted(node.func)) in PARSE_CALLS
    ]


def test_every_json_parse_goes_through_the_parser() -> None:
    offenders, seen = [], set()
    for path in sources():
        rel = path.relative_to(ROOT).as_posix()
        for line, name in parsing_calls(ast.parse(path.read_text(encoding="utf-8"))):
            seen.add((rel, name))
            if (rel, name) not in ALLOWED:
                offenders.append(f"{rel}:{line}: {name}")
    assert not offenders, "parse through cppo_bench.files.jsonio.loads:\n" + "\n".join(offenders)
    stale = sorted(f"{f}: {c}" for f, c in set(ALLOWED) - seen)
    assert not stale, "exceptions no longer in the code:\n" + "\n".join(stale)


def test_the_walk_sees_each_way_around() -> None:
    tree = ast.parse("json.loads(s)\njson.load(f)\njson.JSONDecoder().decode(s)\n")
    assert len(parsing_calls(tree)) == 3
    assert parsing_calls(ast.parse("jsonio.loads(s)\njson.dumps(x)\n")) == []


# --- behaviour ------------------------------------------------------------------------------

HOSTILE = {
    "deep": b"[" * 200_000,
    "deep object": b'{"a":' * 50_000,
    "not utf-8": b'{"text": "\xff\xfe"}',
    "repeated key": b'{"passed": false, "passed": true}',
    "repeated nested key": b'{"choices": [{"text": "a", "index": 0, "text": "b"}]}',
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_text_is_one_value_error(name: str) -> None:
    for parse in (jsonio.loads, lambda t: jsonio.loads_counted(t, 10**6)):
        with pytest.raises(ValueError) as err:
            parse(HOSTILE[name])
        assert "\n" not in str(err.value) and len(str(err.value)) < 300


def test_a_repeated_key_is_named_and_distinct_keys_are_not() -> None:
    with pytest.raises(jsonio.DuplicateKey, match="'passed' appears twice"):
        jsonio.loads(HOSTILE["repeated key"])
    # the same key in two sibling objects, or as a value, is no repeat
    assert jsonio.loads('[{"a": 1}, {"a": {"a": "a"}}]') == [{"a": 1}, {"a": {"a": "a"}}]
    # keys equal only after escapes are decoded are the same key
    with pytest.raises(jsonio.DuplicateKey):
        jsonio.loads('{"a": 1, "\\u0061": 2}')
    # a hostile key is shown escaped and clipped
    with pytest.raises(jsonio.DuplicateKey) as err:
        jsonio.loads('{"\\u001b[2J' + "k" * 500 + '": 1, "\\u001b[2J' + "k" * 500 + '": 2}')
    assert "\x1b" not in str(err.value) and len(str(err.value)) < 200


def test_counted_parse_still_counts_objects() -> None:
    assert jsonio.loads_counted('[{"a": 1}, {"b": 2}]', 4) == [{"a": 1}, {"b": 2}]
    with pytest.raises(jsonio.TooMany):
        jsonio.loads_counted('[{"a": 1}, {"b": 2}]', 3)


def test_constants_refused_on_request() -> None:
    assert jsonio.loads('{"x": NaN}')["x"] != 0  # files this tool wrote may hold NaN
    for text in ('{"x": NaN}', "[Infinity]", "-Infinity"):
        with pytest.raises(ValueError, match="not JSON"):
            jsonio.loads(text, constants=False)


@pytest.mark.parametrize(
    "text",
    ["lr: 1.0e-3\nmax_steps: 4\nlr: 1\n", "a:\n  b: 1\n  b: 2\n", "1: x\n1.0: y\n", "{k: 1, k: 2}"],
)
def test_a_repeated_yaml_key_is_one_line(text: str) -> None:
    with pytest.raises(UserFileError, match=r"f\.yaml:\d+: not valid YAML \(the key .* twice\)"):
        load_yaml(text, "f.yaml")


def test_yaml_without_repeats_still_loads() -> None:
    assert load_yaml("a: {k: 1}\nb: {k: 2}\n1: x\n'1': y\n", "f.yaml") == {
        "a": {"k": 1},
        "b": {"k": 2},
        1: "x",
        "1": "y",
    }


@pytest.fixture()
def hostile_server() -> Iterator[tuple[str, dict[str, bytes]]]:
    """An OpenAI-compatible server whose completion replies are whatever the test sets."""
    reply = {"body": b"{}"}

    class Handler(http.server.BaseHTTPRequestHandler):
        def _send(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 (the library's name)
            self._send(b'{"data": [{"id": "m"}]}')

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._send(reply["body"])

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", reply
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("name", ["deep", "not utf-8", "repeated key"])
def test_a_hostile_openai_reply_is_one_line(hostile_server, name: str, tmp_path: Path) -> None:
    url, reply = hostile_server
    reply["body"] = HOSTILE[name]
    cli = Path(sys.executable).with_name("cppo-bench")
    cmd = [str(cli), "run", "--method", "direct", "--bench", "demo", "--backend", "openai"]
    cmd += ["--base-url", url, "--model", "m", "-k", "1", "--limit", "1"]
    cmd += ["--runs", str(tmp_path / "runs"), "-b", "max_retries=0"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr + done.stdout
    (last,) = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert "response is not JSON" in last, last
