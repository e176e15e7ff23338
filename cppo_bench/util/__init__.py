"""Leaf utilities (standard library only, no cppo_bench imports but `errors`): JSON reading,
KEY=VALUE parsing, terminal-safe text, progress, the name registry."""
