"""Tiny random checkpoints of the model families the study uses, built from configs (no hub).

Each builder writes a plain Hugging Face folder (config, safetensors, tokenizer with a chat
template) that `AutoTokenizer` / the hf backend / vLLM load offline, and returns its path:

* ``tiny_llama(dest)``: LlamaForCausalLM (the dense baseline; SmolLM2 is a Llama).
* ``tiny_qwen35(dest)``: a hub-shaped Qwen3.5 checkpoint: the composite ``qwen3_5`` config
  (text + vision) saved from ``Qwen3_5ForConditionalGeneration``, so its weights are named
  ``model.language_model.*`` like Qwen/Qwen3.5-*; its text model mixes gated-delta-net
  (linear attention) layers with full attention layers, as the real ones do.
* ``tiny_gemma4(dest)``: a hub-shaped Gemma 4 (E2B / E4B layout): the composite ``gemma4``
  config (text + vision + audio) saved from ``Gemma4ForConditionalGeneration``, with
  per-layer inputs, sliding and full attention layers and KV-shared layers.
* ``tiny_gemma3(dest)``: Gemma 3 (text + vision), saved by transformers in the legacy
  ``language_model.model.*`` layout.

The tokenizer is a byte-level BPE (Qwen's pre-tokenizer split) trained on ``WORDS``, so
every word is one token and any text round-trips. The chat templates are small ones
written here: ``QWEN35_LIKE_TEMPLATE`` follows the Qwen3 family's observable contract
(an open ``<think>`` after the assistant header unless ``enable_thinking`` is false, in
which case an empty think block is emitted); ``GEMMA_LIKE_TEMPLATE`` uses turn markers
and ignores ``enable_thinking``. Sizes are a few thousand parameters, so every test
runs in seconds on a CPU.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SPECIAL = ["<pad>", "<eos>", "<unk>", "<bos>"]
CHAT_TOKENS = [
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    "<start_of_turn>",
    "<end_of_turn>",
]
WORDS = (
    "user assistant system model say the a one two three four five six seven eight nine "
    "zero number digit word please now show me print return def if else for in range "
    "input output sum max min sort list graph tree path array string answer plan solve "
    "method use scan binary search greedy dynamic programming hash set map queue stack"
).split()
DIGITS = list("0123456789")

# Qwen3-family contract, written for these tests (not the real template): im_start/im_end
# turns; after the generation prompt an open think block, or an empty closed one when the
# caller passes enable_thinking=false.
QWEN35_LIKE_TEMPLATE = (
    "{%- for m in messages -%}"
    "{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>' + '\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{ '<|im_start|>assistant\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false -%}"
    "{{ '<think>\n\n</think>\n\n' }}"
    "{%- else -%}"
    "{{ '<think>\n' }}"
    "{%- endif -%}"
    "{%- endif -%}"
)

# Gemma-style turns; thinking is not part of this template
GEMMA_LIKE_TEMPLATE = (
    "{{ '<bos>' }}"
    "{%- for m in messages -%}"
    "{%- set role = 'model' if m['role'] == 'assistant' else m['role'] -%}"
    "{{ '<start_of_turn>' + role + '\n' + m['content'] + '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)

PLAIN_TEMPLATE = (
    "{%- for m in messages -%}{{ m['role'] + ' ' + m['content'] + '\n' }}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ 'assistant ' }}{%- endif -%}"
)


# the Qwen2/3/3.5 pre-tokenizer split (letters runs, single digits, punctuation runs,
# newlines, spaces): transformers 5 rebuilds Qwen's tokenizer pipeline from the vocab and
# merges of tokenizer.json, so the tiny tokenizer must already be a byte-level BPE with the
# same pipeline for every loader to read it the same way
_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
    r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def tiny_tokenizer(chat_template: str | None = None, eos: str = "<eos>") -> Any:
    """A byte-level BPE fast tokenizer in which every word of WORDS (with or without a
    leading space) is one token; special tokens are split out before the BPE."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers.trainers import BpeTrainer
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    corpus = [" ".join(WORDS), *WORDS, "\n", " \n", "\n\n", " ".join(DIGITS)]
    trainer = BpeTrainer(
        vocab_size=100_000,  # far above what the corpus yields: every word merges fully
        special_tokens=[*SPECIAL, *CHAT_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        eos_token=eos,
        unk_token="<unk>",
        bos_token="<bos>",
        additional_special_tokens=CHAT_TOKENS,
    )
    if chat_template is not None:
        fast.chat_template = chat_template
    return fast


def _ids(tok: Any) -> dict[str, int]:
    return {
        "pad_token_id": tok.pad_token_id,
        "eos_token_id": tok.eos_token_id,
        "bos_token_id": tok.bos_token_id,
    }


def _save(model: Any, tok: Any, dest: Path) -> Path:
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest, safe_serialization=True)
    tok.save_pretrained(dest)
    return dest


def tiny_llama(
    dest: Path, seed: int = 0, chat_template: str | None = PLAIN_TEMPLATE, context: int = 256
) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = tiny_tokenizer(chat_template)
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=context,
        **_ids(tok),
    )
    return _save(LlamaForCausalLM(cfg), tok, dest)


def tiny_qwen35(
    dest: Path,
    seed: int = 0,
    chat_template: str = QWEN35_LIKE_TEMPLATE,
    head_dim: int = 8,
    context: int = 256,
) -> Path:
    """Hub-shaped Qwen3.5: 4 text layers, 3 linear-attention (gated delta net) + 1 full.
    ``head_dim`` (every head, full and linear): vLLM's CPU attention needs >= 32."""
    import torch
    from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

    tok = tiny_tokenizer(chat_template, eos="<|im_end|>")
    torch.manual_seed(seed)
    text = {
        "vocab_size": len(tok),
        "hidden_size": 4 * head_dim,
        "intermediate_size": 8 * head_dim,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": head_dim,
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": head_dim,
        "linear_value_head_dim": head_dim,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 4,
        "layer_types": ["linear_attention"] * 3 + ["full_attention"],
        "max_position_embeddings": context,
        **_ids(tok),
    }
    vision = {
        "depth": 1,
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_heads": 2,
        "out_hidden_size": 4 * head_dim,
        "num_position_embeddings": 16,
    }
    cfg = Qwen3_5Config(text_config=text, vision_config=vision, tie_word_embeddings=False)
    cfg.eos_token_id = tok.eos_token_id
    return _save(Qwen3_5ForConditionalGeneration(cfg), tok, dest)


def tiny_gemma4(
    dest: Path,
    seed: int = 0,
    chat_template: str = GEMMA_LIKE_TEMPLATE,
    context: int = 256,
    head_dim: int = 8,
) -> Path:
    """Hub-shaped Gemma 4 (E2B layout in miniature): 6 text layers, sliding window 4,
    the last 2 layers reuse earlier layers' KV, per-layer input embeddings, vision and
    audio towers. ``head_dim`` (sliding layers; full layers twice it): vLLM's CPU attention
    needs >= 32."""
    import torch
    from transformers import Gemma4Config, Gemma4ForConditionalGeneration

    tok = tiny_tokenizer(chat_template, eos="<end_of_turn>")
    torch.manual_seed(seed)
    text = {
        "vocab_size": len(tok),
        "vocab_size_per_layer_input": len(tok),
        "hidden_size": 4 * head_dim,
        "hidden_size_per_layer_input": 8,
        "intermediate_size": 8 * head_dim,
        "num_hidden_layers": 6,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": head_dim,
        "global_head_dim": 2 * head_dim,
        "sliding_window": 4,
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2,
        "num_kv_shared_layers": 2,
        "max_position_embeddings": context,
        "final_logit_softcapping": 30.0,
        **_ids(tok),
    }
    vision = {
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "head_dim": 8,
    }
    audio = {
        "hidden_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "subsampling_conv_channels": [8, 4],
        "output_proj_dims": 32,
    }
    # the real checkpoints' special-token ids lie far past this vocabulary: point them at
    # <unk> so the multimodal embedder sees no image/audio token in text-only prompts
    unk = tok.unk_token_id
    cfg = Gemma4Config(
        text_config=text,
        vision_config=vision,
        audio_config=audio,
        boi_token_id=unk,
        eoi_token_id=unk,
        image_token_id=unk,
        video_token_id=unk,
        boa_token_id=unk,
        eoa_token_index=unk,
        audio_token_id=unk,
    )
    cfg.eos_token_id = tok.eos_token_id
    return _save(Gemma4ForConditionalGeneration(cfg), tok, dest)


def tiny_gemma3(
    dest: Path, seed: int = 0, chat_template: str = GEMMA_LIKE_TEMPLATE, context: int = 256
) -> Path:
    """Gemma 3 (text + vision). transformers saves it in the legacy layout
    (`language_model.model.*`), which only the multimodal class maps back: the loader's
    fallback path."""
    import torch
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration

    tok = tiny_tokenizer(chat_template, eos="<end_of_turn>")
    torch.manual_seed(seed)
    text = {
        "vocab_size": len(tok),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "sliding_window": 4,
        "max_position_embeddings": context,
        **_ids(tok),
    }
    vision = {
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "image_size": 28,
        "patch_size": 14,
    }
    unk = tok.unk_token_id  # no image tokens in text prompts
    cfg = Gemma3Config(
        text_config=text,
        vision_config=vision,
        mm_tokens_per_image=4,
        image_token_index=unk,
        boi_token_index=unk,
        eoi_token_index=unk,
    )
    cfg.eos_token_id = tok.eos_token_id
    return _save(Gemma3ForConditionalGeneration(cfg), tok, dest)


BUILDERS = {
    "llama": tiny_llama,
    "qwen3_5": tiny_qwen35,
    "gemma4": tiny_gemma4,
    "gemma3": tiny_gemma3,
}


def build(family: str, dest: Path, seed: int = 0, context: int = 256) -> Path:
    """The tiny checkpoint of `family` (a key of BUILDERS) under `dest`, built once;
    ``context``: its max_position_embeddings (a real prompt of the demo set needs ~1k)."""
    dest = Path(dest)
    if (dest / "config.json").is_file():
        return dest
    return BUILDERS[family](dest, seed=seed, context=context)
