"""The run store: record schema, run directories, index, opening, merging, generation cache,
frames. Its files are opened through `cppo_bench.files` (`fs`, `lock`)."""
