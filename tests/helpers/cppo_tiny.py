"""Tiny models and data for the CPPO pipeline tests (no hub, no embedded model)."""

from __future__ import annotations

import re

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from cppo_bench.problem import Problem, Test

_WORDS = re.compile(r"\S+")


def word_tokenizer(texts: list[str]) -> PreTrainedTokenizerFast:
    words = sorted({w for t in texts for w in _WORDS.findall(t)} | {"Yes", "No"})
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[EOS]", *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]"
    )


def tiny_llama(vocab: int, seed: int = 0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
    )
    return LlamaForCausalLM(cfg)


TOPICS = [
    ("graph", "shortest path between two cities on a weighted road graph"),
    ("interval", "maximum number of non overlapping intervals on a line"),
    ("string", "longest palindromic substring of a given string"),
    ("array", "maximum subarray sum of an integer array"),
    ("tree", "diameter of a tree given its edges"),
    ("coins", "minimum number of coins that make a target amount"),
    ("grid", "number of islands in a binary grid"),
    ("prime", "count primes below a bound n"),
]

METHODS = {
    "graph": [
        "Run Dijkstra with a binary heap over the weighted road graph.",
        "Run Bellman Ford relaxation over every road edge of the graph.",
        "Use Floyd Warshall on the road graph when the city count is small.",
        "Run A star search over the road graph with a straight line heuristic.",
    ],
    "interval": [
        "Sort intervals by right end and greedily keep each non overlapping interval.",
        "Use dynamic programming over intervals sorted by end with binary search.",
        "Sweep the line over interval endpoints keeping the earliest finishing interval.",
        "Build an interval graph and take a maximum independent set greedily by end.",
    ],
    "string": [
        "Expand around every center of the string to grow palindromes.",
        "Use Manacher on the string with separators to get every palindrome radius.",
        "Fill a dynamic programming table of palindromic substring flags by length.",
        "Hash prefixes of the string and its reverse and binary search palindrome length.",
    ],
    "array": [
        "Use Kadane scan over the array keeping the best sum ending here.",
        "Use prefix sums of the array and track the minimum prefix so far.",
        "Divide the array in halves and combine the best crossing subarray sum.",
        "Use a segment tree over the array storing best prefix suffix and total sums.",
    ],
    "tree": [
        "Run BFS from any tree node then BFS again from the farthest node.",
        "Use a DFS over the tree returning the two deepest child depths.",
        "Peel tree leaves layer by layer until one or two centers remain.",
        "Use dynamic programming on the rooted tree with the longest downward path.",
    ],
    "coins": [
        "Use dynamic programming over amounts up to the target with each coin.",
        "Run BFS over amounts where each coin is an edge toward the target.",
        "Use memoised recursion on the remaining amount over each coin choice.",
        "Use branch and bound over coins sorted descending toward the target amount.",
    ],
    "grid": [
        "Flood fill each land cell of the grid with DFS and count islands.",
        "Run BFS from each unvisited land cell of the grid counting islands.",
        "Use union find over adjacent land cells of the grid and count roots.",
        "Scan the grid row by row labelling islands with connected component merging.",
    ],
    "prime": [
        "Use the sieve of Eratosthenes up to the bound n and count primes.",
        "Use a segmented sieve over blocks below the bound n counting primes.",
        "Test each number below n by trial division up to its square root for primes.",
        "Use a linear sieve below n that marks each composite once and counts primes.",
    ],
}


def problems() -> list[Problem]:
    return [
        Problem(
            benchmark="tiny",
            problem_id=key,
            statement=f"Compute the {desc}. Read the input and print the result.",
            tests=(Test("1\n", f"{i + 100}\n"),),
        )
        for i, (key, desc) in enumerate(TOPICS)
    ]
