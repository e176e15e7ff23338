"""Turning a GenRequest into the exact prompt text a model sees, shared by every backend.

Instruct models (their tokenizer has a chat template) get the template with the
generation prompt appended; base models get the messages as plain paragraphs. A request
that already carries `prompt` is used verbatim. The hf and vllm backends both render
here, so the same request gives the same prompt tokens on either engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cppo_bench.backends.base import GenRequest
from cppo_bench.util.termsafe import quote

CHAT_MODES = ("auto", "template", "plain")  # backend option `chat`

# backend option `enable_thinking`, handed to the chat template. The study's prompts ask for
# a direct answer (a plan list, one code block), so it is False unless asked otherwise:
# Qwen3-family templates (Qwen3.5 included) open a <think> block when the key is absent.
# Templates that do not read the key render the same text either way. None: pass nothing.
DEFAULT_ENABLE_THINKING: bool | None = False


def check_enable_thinking(value: object) -> None:
    """One clear error for an enable_thinking that is not true, false or null."""
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"enable_thinking must be true, false or null, got {quote(value)}")


def has_chat_template(tokenizer: Any) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def plain_prompt(messages: Sequence[dict[str, str]]) -> str:
    """Messages as paragraphs for a base model: no role labels it was never trained on.

    A final assistant message is a prefill: the text ends with it, so the model continues it.
    """
    parts = [m["content"].strip("\n") for m in messages]
    text = "\n\n".join(p for p in parts if p)
    if messages and messages[-1]["role"] == "assistant":
        return text
    return text + "\n\n"


def uses_template(tokenizer: Any, chat: str = "auto") -> bool:
    """Whether messages go through the chat template under backend option `chat`."""
    if chat not in CHAT_MODES:
        raise ValueError(f"chat must be one of {', '.join(CHAT_MODES)}, got {quote(chat)}")
    if chat == "plain":
        return False
    if chat == "template" and not has_chat_template(tokenizer):
        raise ValueError("chat=template, but the tokenizer has no chat template")
    return has_chat_template(tokenizer)


def render_messages(
    tokenizer: Any,
    messages: Sequence[dict[str, str]],
    chat: str = "auto",
    enable_thinking: bool | None = DEFAULT_ENABLE_THINKING,
) -> str:
    if not uses_template(tokenizer, chat):
        return plain_prompt(messages)
    check_enable_thinking(enable_thinking)
    msgs = [dict(m) for m in messages]
    prefill = msgs[-1]["role"] == "assistant"
    kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": not prefill}
    if prefill:
        kwargs["continue_final_message"] = True
    if enable_thinking is not None:
        kwargs["enable_thinking"] = enable_thinking  # a template variable, like vLLM's
    return tokenizer.apply_chat_template(msgs, **kwargs)


def render(
    tokenizer: Any,
    request: GenRequest,
    chat: str = "auto",
    enable_thinking: bool | None = DEFAULT_ENABLE_THINKING,
) -> str:
    """The prompt text of one request."""
    if request.prompt is not None:
        return request.prompt
    assert request.messages is not None
    return render_messages(tokenizer, request.messages, chat, enable_thinking)


def templated(tokenizer: Any, request: GenRequest, chat: str = "auto") -> bool:
    """True when the rendered text came from the chat template (it carries its own BOS)."""
    return request.messages is not None and uses_template(tokenizer, chat)


def encode(
    tokenizer: Any,
    request: GenRequest,
    chat: str = "auto",
    enable_thinking: bool | None = DEFAULT_ENABLE_THINKING,
) -> list[int]:
    """Prompt token ids. Template output already holds its special tokens, so no second BOS."""
    text = render(tokenizer, request, chat, enable_thinking)
    add_special = not templated(tokenizer, request, chat)
    return list(tokenizer(text, add_special_tokens=add_special)["input_ids"])
