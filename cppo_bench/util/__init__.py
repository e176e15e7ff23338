"""Leaf utilities, importing nothing of cppo_bench but `errors`: JSON reading (`jsonio`),
KEY=VALUE parsing (`keyvals`), terminal-safe text (`termsafe`), progress (`progress`), the
name registry (`registry`) and the package version (`version`)."""
