"""The run store: record schema, files, lock, index, opening, merging, generation cache, frames."""
