"""Leaf utilities, importing nothing of cppo_bench but `errors`: KEY=VALUE parsing
(`keyvals`), terminal-safe text (`termsafe`), progress (`progress`), the name registry
(`registry`) and the package version (`version`). Files, read and written, are `cppo_bench.files`."""
