"""`cppo-bench serve`'s API: ServeConfig built once (from a config or keywords), the server's
own config made from it, and each bad setting one line before any port is bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from cppo_bench.api import build_config
from cppo_bench.api.serve import ServeConfig, serve
from cppo_bench.errors import DataError


def test_the_server_config_is_what_the_settings_say(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t" * 20 + "\n")
    config = build_config(ServeConfig, {"host": "0.0.0.0", "token_file": token, "workers": 4,
                                        "lanes": 3, "queue_size": 2, "max_body_mb": 2})  # fmt: skip
    server = config.server_config()
    assert (server.host, server.token, server.lanes) == ("0.0.0.0", "t" * 20, 3)
    assert server.max_body_bytes == 2 * 1024 * 1024
    assert server.queue_size == 3  # never fewer places than lanes verifying at once
    assert ServeConfig(max_time_limit=5.0).server_config().max_time_s == 5.0


@pytest.mark.parametrize(("settings", "says"), [
    ({"host": "0.0.0.0"}, "refusing to bind 0.0.0.0"),
    ({"data": "somewhere.jsonl"}, "data and loader options go with bench"),
    ({"loader_options": {"difficulty": "all"}}, "go with bench"),
    ({"port": "http"}, "setting port"),
    ({"workers": 1, "lanes": 2}, "2 lanes need at least as many workers"),
    ({"max_tests": 0}, "max_tests 0: give 1 to"),
    ({"hots": "127.0.0.1"}, "hots"),
    ({"workers": 0}, "workers 0: give 1 to"),  # click's ranges hold for a Python caller too
    ({"max_time_limit": 0.0}, "max_time_limit 0.0: give 0.001 to 60"),
    ({"max_time_limit": 1e9}, "max_time_limit"),
    ({"max_output_mb": 0}, "max_output_mb 0"),
    ({"port": 70000}, "port 70000"),
])  # fmt: skip
def test_a_bad_setting_is_one_line_before_anything_binds(monkeypatch, settings, says) -> None:
    monkeypatch.delenv("CPPO_SERVE_TOKEN", raising=False)
    with pytest.raises(DataError) as err:
        serve(**settings)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_token_file_must_hold_one_line(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("a" * 20 + "\n" + "b" * 20 + "\n")
    with pytest.raises(DataError, match="expected one line holding the token"):
        serve(token_file=str(token))
    with pytest.raises(DataError, match="not both"):
        serve(ServeConfig(), port=1)
