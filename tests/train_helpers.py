"""Helpers for the trainer tests: a tiny random Llama with the embedded model's tokenizer."""

from __future__ import annotations

from pathlib import Path


def tiny_model_dir(dest: Path, seed: int = 0, head_dim: int = 8) -> Path:
    """A 2-layer random Llama (fp32, 4 heads of `head_dim`) saved with SmolLM2's tokenizer and
    chat template. vLLM's CPU attention needs head_dim >= 32."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from cppo_bench.backends.default_model import ensure_default_model

    if (dest / "config.json").is_file():
        return dest
    tok = AutoTokenizer.from_pretrained(ensure_default_model())
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=4 * head_dim,
        intermediate_size=8 * head_dim,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(dest, safe_serialization=True)
    tok.save_pretrained(dest)
    return dest
