"""The trainers' one door to the harness: every name of `cppo_bench` a trainers/ module may
use, and the only trainers/ module that imports `cppo_bench` (tests/trainers/
test_trainers_structure.py fails on any other). A name is imported from the harness on first
use, so `import trainers` stays light (no torch, no vLLM, no verifier) and a module that
uses a heavy name lazily still loads it lazily. Add a name here, with its source, before
using it in trainers/; the same table is spelled out for the type checker below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# facade name -> "module:attribute" of the harness ("module:" for a module)
HARNESS: dict[str, str] = {
    "Backend": "cppo_bench.backends:Backend",
    "BACKENDS": "cppo_bench.backends:BACKENDS",
    "BENCHMARKS": "cppo_bench.benchmarks:BENCHMARKS",
    "binary_arrays": "cppo_bench.metrics.roc:binary_arrays",
    "build_config": "cppo_bench.api.config:build_config",
    "builder": "cppo_bench.util.builder:",
    "chat": "cppo_bench.backends.chat:",
    "check_real_folder": "cppo_bench.files.outdir:check_real_folder",
    "close_fence": "cppo_bench.methods.base:close_fence",
    "configured": "cppo_bench.cli.options:configured",
    "DataError": "cppo_bench.errors:DataError",
    "decontaminate": "cppo_bench.decontam:decontaminate",
    "DEFAULT_MODEL": "cppo_bench.backends.default_model:DEFAULT_MODEL",
    "DEFAULT_VERSION": "cppo_bench.prompts:DEFAULT_VERSION",
    "derive_seed": "cppo_bench.methods.base:derive_seed",
    "echo": "cppo_bench.util.termsafe:echo",
    "ensure_default_model": "cppo_bench.backends.default_model:ensure_default_model",
    "env": "cppo_bench.util.env:",
    "format_plans": "cppo_bench.plan.contract:format_plans",
    "GATE_LOG": "cppo_bench.store.training_schema:GATE_LOG",
    "GENERIC_PLAN": "cppo_bench.plan.contract:GENERIC_PLAN",
    "GenRequest": "cppo_bench.backends.base:GenRequest",
    "git_commit": "cppo_bench.util.gitinfo:git_commit",
    "HFBackend": "cppo_bench.backends.hf:HFBackend",
    "import_vllm": "cppo_bench.backends.vllm:import_vllm",
    "jsonio": "cppo_bench.files.jsonio:",
    "keep_sandboxes": "cppo_bench.verifier:keep_sandboxes",
    "load_benchmark": "cppo_bench.benchmarks:load_benchmark",
    "load_line": "cppo_bench.benchmarks.loadreport:load_line",
    "load_model": "cppo_bench.backends.hf:load_model",
    "load_prompt": "cppo_bench.prompts:load_prompt",
    "load_source": "cppo_bench.decontam.sources:load_source",
    "make_root": "cppo_bench.files.outdir:make_root",
    "METRICS": "cppo_bench.store.training_schema:METRICS",
    "nest": "cppo_bench.util.keyvals:nest",
    "node_service": "cppo_bench.serve.node:node_service",
    "os_reason": "cppo_bench.files.oserrors:os_reason",
    "OutDir": "cppo_bench.files.outdir:OutDir",
    "parse_judge_verdict": "cppo_bench.plan.contract:parse_judge_verdict",
    "parse_kv": "cppo_bench.cli.options:parse_kv",
    "parse_plans": "cppo_bench.plan.contract:parse_plans",
    "plan_tuple": "cppo_bench.plan.contract:plan_tuple",
    "Problem": "cppo_bench.problem:Problem",
    "process_cpus": "cppo_bench.verifier.cpus:process_cpus",
    "progress_bar": "cppo_bench.util.progress:progress_bar",
    "quiet_loading": "cppo_bench.backends.default_model:quiet_loading",
    "quote": "cppo_bench.util.termsafe:quote",
    "read_jsonl": "cppo_bench.store.training_schema:read_jsonl",
    "read_manifest": "cppo_bench.store.training_schema:read_manifest",
    "read_metrics": "cppo_bench.store.training_schema:read_metrics",
    "read_test_set": "cppo_bench.augment.store:read_test_set",
    "Registry": "cppo_bench.util.registry:Registry",
    "serve_installed": "cppo_bench.serve.node:serve_installed",
    "setting": "cppo_bench.api.config:setting",
    "render": "cppo_bench.prompts:render",
    "render_messages": "cppo_bench.methods.direct:render_messages",
    "required": "cppo_bench.api.config:required",
    "roc_auc": "cppo_bench.metrics.roc:roc_auc",
    "SamplingParams": "cppo_bench.backends.base:SamplingParams",
    "Source": "cppo_bench.decontam:Source",
    "STAGES": "cppo_bench.store.training_schema:STAGES",
    "stop_strings": "cppo_bench.methods.direct:stop_strings",
    "storefs": "cppo_bench.files.fs:",
    "TAU": "cppo_bench.store.training_schema:TAU",
    "TRAIN_MANIFEST": "cppo_bench.store.training_schema:TRAIN_MANIFEST",
    "training_schema": "cppo_bench.store.training_schema:",
    "UserError": "cppo_bench.errors:UserError",
    "userfiles": "cppo_bench.files.userfiles:",
    "validate_plans": "cppo_bench.plan.contract:validate_plans",
    "VerifierClient": "cppo_bench.serve.client:VerifierClient",
    "verify_batch": "cppo_bench.verifier:verify_batch",
    "VerifyJob": "cppo_bench.verifier:VerifyJob",
    "with_tests": "cppo_bench.augment.store:with_tests",
}

if TYPE_CHECKING:  # the same names, spelled out for the type checker (`X as X`: re-exported)
    from cppo_bench.api.config import build_config as build_config
    from cppo_bench.api.config import required as required
    from cppo_bench.api.config import setting as setting
    from cppo_bench.augment.store import read_test_set as read_test_set
    from cppo_bench.augment.store import with_tests as with_tests
    from cppo_bench.backends import BACKENDS as BACKENDS
    from cppo_bench.backends import Backend as Backend
    from cppo_bench.backends import chat as chat
    from cppo_bench.backends.base import GenRequest as GenRequest
    from cppo_bench.backends.base import SamplingParams as SamplingParams
    from cppo_bench.backends.default_model import DEFAULT_MODEL as DEFAULT_MODEL
    from cppo_bench.backends.default_model import ensure_default_model as ensure_default_model
    from cppo_bench.backends.default_model import quiet_loading as quiet_loading
    from cppo_bench.backends.hf import HFBackend as HFBackend
    from cppo_bench.backends.hf import load_model as load_model
    from cppo_bench.backends.vllm import import_vllm as import_vllm
    from cppo_bench.benchmarks import BENCHMARKS as BENCHMARKS
    from cppo_bench.benchmarks import load_benchmark as load_benchmark
    from cppo_bench.benchmarks.loadreport import load_line as load_line
    from cppo_bench.cli.options import configured as configured
    from cppo_bench.cli.options import parse_kv as parse_kv
    from cppo_bench.decontam import Source as Source
    from cppo_bench.decontam import decontaminate as decontaminate
    from cppo_bench.decontam.sources import load_source as load_source
    from cppo_bench.errors import DataError as DataError
    from cppo_bench.errors import UserError as UserError
    from cppo_bench.files import fs as storefs  # noqa: F401  (re-exported)
    from cppo_bench.files import jsonio as jsonio
    from cppo_bench.files import userfiles as userfiles
    from cppo_bench.files.oserrors import os_reason as os_reason
    from cppo_bench.files.outdir import OutDir as OutDir
    from cppo_bench.files.outdir import check_real_folder as check_real_folder
    from cppo_bench.files.outdir import make_root as make_root
    from cppo_bench.methods.base import close_fence as close_fence
    from cppo_bench.methods.base import derive_seed as derive_seed
    from cppo_bench.methods.direct import render_messages as render_messages
    from cppo_bench.methods.direct import stop_strings as stop_strings
    from cppo_bench.metrics.roc import binary_arrays as binary_arrays
    from cppo_bench.metrics.roc import roc_auc as roc_auc
    from cppo_bench.plan.contract import GENERIC_PLAN as GENERIC_PLAN
    from cppo_bench.plan.contract import format_plans as format_plans
    from cppo_bench.plan.contract import parse_judge_verdict as parse_judge_verdict
    from cppo_bench.plan.contract import parse_plans as parse_plans
    from cppo_bench.plan.contract import plan_tuple as plan_tuple
    from cppo_bench.plan.contract import validate_plans as validate_plans
    from cppo_bench.problem import Problem as Problem
    from cppo_bench.prompts import DEFAULT_VERSION as DEFAULT_VERSION
    from cppo_bench.prompts import load_prompt as load_prompt
    from cppo_bench.prompts import render as render
    from cppo_bench.serve.client import VerifierClient as VerifierClient
    from cppo_bench.serve.node import node_service as node_service
    from cppo_bench.serve.node import serve_installed as serve_installed
    from cppo_bench.store import training_schema as training_schema
    from cppo_bench.store.training_schema import GATE_LOG as GATE_LOG
    from cppo_bench.store.training_schema import METRICS as METRICS
    from cppo_bench.store.training_schema import STAGES as STAGES
    from cppo_bench.store.training_schema import TAU as TAU
    from cppo_bench.store.training_schema import TRAIN_MANIFEST as TRAIN_MANIFEST
    from cppo_bench.store.training_schema import read_jsonl as read_jsonl
    from cppo_bench.store.training_schema import read_manifest as read_manifest
    from cppo_bench.store.training_schema import read_metrics as read_metrics
    from cppo_bench.util import builder as builder
    from cppo_bench.util import env as env
    from cppo_bench.util.gitinfo import git_commit as git_commit
    from cppo_bench.util.keyvals import nest as nest
    from cppo_bench.util.progress import progress_bar as progress_bar
    from cppo_bench.util.registry import Registry as Registry
    from cppo_bench.util.termsafe import echo as echo
    from cppo_bench.util.termsafe import quote as quote
    from cppo_bench.verifier import VerifyJob as VerifyJob
    from cppo_bench.verifier import keep_sandboxes as keep_sandboxes
    from cppo_bench.verifier import verify_batch as verify_batch
    from cppo_bench.verifier.cpus import process_cpus as process_cpus


def __getattr__(name: str) -> Any:
    # not cached: a name read at call time sees the harness's current attribute, as the
    # lazy `from cppo_bench... import` it replaces did
    target = HARNESS.get(name)
    if target is None:
        from cppo_bench.util.termsafe import quote as _quote

        raise AttributeError(f"trainers.harness has no name {_quote(name)}: add it to HARNESS")
    module, _, attr = target.partition(":")
    value = importlib.import_module(module)
    return getattr(value, attr) if attr else value


__all__ = sorted(HARNESS)
