"""The `openai` backend.

Behaviour that needs a real model runs against a real OpenAI-compatible server: llama.cpp's
(`pip install 'llama-cpp-python[server]'`) serving the embedded SmolLM2 GGUF on 127.0.0.1,
started here. It skips, saying so, where that package is missing.

Retries, backoff and error mapping are checked against a small scripted HTTP server,
because no real server fails on cue.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests_paths import free_port

from cppo_bench.backends import BACKENDS, GenRequest, SamplingParams
from cppo_bench.backends import default_model as dm
from cppo_bench.backends.base import BackendError, ModelLoadError
from cppo_bench.backends.openai import OpenAIBackend, map_finish, normalize_base_url


def chat(text: str, **params: object) -> GenRequest:
    return GenRequest(
        params=SamplingParams(**params),  # type: ignore[arg-type]
        messages=({"role": "user", "content": text},),
    )


# -- fast: pure helpers and a scripted server ---------------------------------------------


def test_base_url_and_finish_mapping() -> None:
    assert normalize_base_url("http://h:8000") == "http://h:8000/v1"
    assert normalize_base_url("http://h:8000/v1/") == "http://h:8000/v1"
    with pytest.raises(BackendError, match="not an http"):
        normalize_base_url("localhost:8000")
    assert [map_finish(r) for r in ("stop", "length", "eos", None, "abort")] == [
        "stop",
        "length",
        "stop",
        "stop",
        "error",
    ]


def test_backoff_grows_with_jitter_and_respects_retry_after() -> None:
    b = OpenAIBackend("m", base_url="http://127.0.0.1:9", backoff=1.0, max_backoff=8.0)
    for attempt, cap in [(0, 1.0), (1, 2.0), (2, 4.0), (5, 8.0)]:
        delays = [b.delay(attempt) for _ in range(50)]
        assert all(cap / 2 <= d <= cap for d in delays)
        assert len(set(delays)) > 1  # jittered
    assert b.delay(0, server_wait=3.0) == 3.0


class Scripted(BaseHTTPRequestHandler):
    """Answers POSTs from a per-server script of (status, body) and records the requests."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server = self.server
        assert isinstance(server, ScriptedServer)
        server.seen.append((self.path, body, self.headers.get("Authorization")))
        status, reply = server.script.pop(0) if server.script else (200, None)
        payload = json.dumps(reply or ok_reply(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


class ScriptedServer(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Scripted)
        self.script: list[tuple[int, dict | None]] = []  # (status, body) per request, in order
        self.seen: list[tuple[str, dict, str | None]] = []  # (path, body, Authorization)


def ok_reply(body: dict) -> dict:
    text = "echo:" + str(body.get("seed"))
    choice: dict[str, object] = {"finish_reason": "stop"}
    choice.update({"message": {"content": text}} if "messages" in body else {"text": text})
    return {"choices": [choice], "usage": {"completion_tokens": 3, "prompt_tokens": 5}}


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    server = ScriptedServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def client(server: ThreadingHTTPServer, **options: object) -> OpenAIBackend:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    return BACKENDS.get("openai")("m", base_url=url, backoff=0.01, **options)


def test_retries_5xx_and_429_then_succeeds(scripted) -> None:
    scripted.script += [(503, {"error": "busy"}), (429, {"error": {"message": "slow down"}})]
    res = client(scripted, api_key="sk-test").generate([chat("hi", seed=7)])
    assert res[0].text == "echo:7" and res[0].num_tokens == 3 and res[0].prompt_tokens == 5
    assert len(scripted.seen) == 3
    path, body, auth = scripted.seen[-1]
    assert path == "/v1/chat/completions" and auth == "Bearer sk-test"
    assert body["seed"] == 7 and body["model"] == "m" and "stop" not in body


def test_gives_up_after_max_retries(scripted) -> None:
    scripted.script += [(500, {"error": "down"})] * 3
    with pytest.raises(BackendError, match=r"failed after 3 tries: HTTP 500: down"):
        client(scripted, max_retries=2).generate([chat("hi")])


def test_bad_request_is_an_error_result_not_a_crash(scripted) -> None:
    scripted.script.append((400, {"error": {"message": "prompt too long"}}))
    res = client(scripted, concurrency=1).generate([chat("a"), chat("b", seed=2)])
    assert res[0].finish_reason == "error" and "prompt too long" in res[0].extra["error"]
    assert res[1].text == "echo:2"


def test_unreachable_server_is_one_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    backend = BACKENDS.get("openai")("m", base_url=url, max_retries=1, backoff=0.01)
    with pytest.raises(BackendError, match=r"failed after 2 tries"):
        backend.generate([chat("hi")])


def test_prompts_go_to_completions_and_results_keep_order(scripted) -> None:
    reqs = [GenRequest(params=SamplingParams(seed=s, stop=("\n",)), prompt="x") for s in range(6)]
    res = client(scripted, concurrency=4).generate(reqs)
    assert [r.text for r in res] == [f"echo:{s}" for s in range(6)]
    assert {p for p, _, _ in scripted.seen} == {"/v1/completions"}
    assert all(b["stop"] == ["\n"] and b["prompt"] == "x" for _, b, _ in scripted.seen)


def test_missing_usage_falls_back_to_counting(scripted) -> None:
    reply = {"choices": [{"message": {"content": "abcdefgh"}, "finish_reason": "length"}]}
    scripted.script.append((200, reply))
    res = client(scripted).generate([chat("hi")])[0]  # "m" is no tokenizer on disk
    assert res.finish_reason == "length" and res.num_tokens == 2  # ~4 bytes a token
    assert res.extra["num_tokens_from"] == "estimate"


@pytest.mark.slow  # imports transformers
def test_missing_usage_counted_with_a_local_tokenizer(scripted) -> None:
    if not dm.is_complete(dm.default_model_dir()):
        pytest.skip("no cached default model folder (any hf backend run makes it)")
    reply = {"choices": [{"message": {"content": "abcdefgh"}, "finish_reason": "length"}]}
    scripted.script.append((200, reply))
    counted = client(scripted, tokenizer=str(dm.default_model_dir())).generate([chat("hi")])
    assert counted[0].extra["num_tokens_from"] == "tokenizer"
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(dm.default_model_dir())
    assert counted[0].num_tokens == len(tok("abcdefgh", add_special_tokens=False)["input_ids"])


# -- slow: a real llama.cpp server ----------------------------------------------------------


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory) -> Iterator[str]:
    pytest.importorskip("llama_cpp.server", reason="needs pip install 'llama-cpp-python[server]'")
    try:
        gguf = dm.find_gguf()
    except ModelLoadError as exc:
        pytest.skip(str(exc))
    port = free_port()
    log = Path(tmp_path_factory.mktemp("llama")) / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf)]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama.cpp server exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(url + "/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"llama.cpp server did not start: {log.read_text()[-2000:]}")
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def real(llama_server) -> OpenAIBackend:
    return BACKENDS.get("openai")(None, base_url=llama_server, concurrency=2)


@pytest.mark.slow
def test_real_server_chat_usage_and_length(real) -> None:
    assert real.model_id  # discovered from /v1/models
    res = real.generate([chat("Write a Python function that reverses a string.", max_tokens=8)])
    assert res[0].finish_reason == "length" and res[0].num_tokens == 8
    assert res[0].text and res[0].prompt_tokens > 8


@pytest.mark.slow
def test_real_server_seeds_stops_and_order(real) -> None:
    prompts = ["Name a color.", "Name an animal.", "Name a fruit."]
    batch = [chat(p, temperature=1.0, max_tokens=8, seed=11) for p in prompts]
    first = real.generate(batch)
    assert [r.text for r in real.generate(batch[::-1])][::-1] == [r.text for r in first]
    assert real.generate([batch[1]])[0].text == first[1].text
    seeds = real.generate(
        [chat(prompts[0], temperature=1.0, max_tokens=8, seed=s) for s in range(4)]
    )
    assert len({r.text for r in seeds}) > 1
    free = real.generate(
        [chat("Write a Python function that reverses a string.", max_tokens=16, temperature=0.0)]
    )[0]
    stop = free.text[6:10]
    cut = real.generate(
        [
            chat(
                "Write a Python function that reverses a string.",
                max_tokens=16,
                temperature=0.0,
                stop=(stop,),
            )
        ]
    )[0]
    assert cut.finish_reason == "stop" and cut.text == free.text[: free.text.find(stop)]


@pytest.mark.slow
def test_real_server_plain_completions(real, llama_server) -> None:
    prompt = GenRequest(
        params=SamplingParams(temperature=0.0, max_tokens=6), prompt="def add(a, b):"
    )
    res = real.generate([prompt])[0]
    assert res.text and res.num_tokens <= 6 and res.prompt_tokens > 0
    plain = BACKENDS.get("openai")(None, base_url=llama_server, endpoint="completions")
    as_text = plain.generate([chat("Say hi.", temperature=0.0, max_tokens=6)])[0]
    assert (
        as_text.prompt_tokens
        < real.generate([chat("Say hi.", temperature=0.0, max_tokens=6)])[0].prompt_tokens
    )
