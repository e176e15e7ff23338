"""The one error hierarchy of cppo_bench.

`UserError` is the base of every error the user can fix (bad input data, a bad option, an
unknown name, a missing model or sandbox, a locked run): the CLI turns it into its one-line
message at one place (`cppo_bench.cli.LazyGroup.invoke`), never a traceback; a command adds
context by raising another of these, never by printing. `DataError` is the common case (bad
input data). Each class also keeps the standard base a caller may already catch
(`ValueError`, `KeyError`, `RuntimeError`).
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "DataError",
    "EncoderUnavailable",
    "KeyValueError",
    "ModelLoadError",
    "RunLockedError",
    "SettingError",
    "StoreLinkError",
    "UnknownNameError",
    "UnsafeName",
    "UnsafePickleError",
    "UserError",
]


class UserError(Exception):
    """An error the user can fix; its message is one line naming what and where."""


class DataError(UserError, ValueError):
    """Bad input data: the message names the file/record and what is wrong."""


class UnknownNameError(UserError, KeyError):
    """Raised for a name no entry was registered under; the message lists the known names."""

    def __str__(self) -> str:  # KeyError quotes its message; we want plain text
        return str(self.args[0])


class SettingError(DataError):
    """A setting of a command's config (cppo_bench.api) that is wrong: ``setting`` names the
    field, so the CLI can name the flag the user typed instead ("--shard: ...")."""

    def __init__(self, setting: str, why: str) -> None:
        super().__init__(f"setting {setting}: {why}")
        self.setting, self.why = setting, why


class KeyValueError(UserError, ValueError):
    """A malformed KEY=VALUE pair; the message is one line naming it."""


class BackendError(DataError):
    """A backend that cannot do its job for a reason the user can fix (a missing model or
    package, an unreachable server). One clear line; a DataError so the CLI prints just that."""


class ModelLoadError(BackendError):
    """A model (the embedded default or --model) that cannot be loaded."""


class RunLockedError(DataError):
    """Another live process holds the run's lock."""


class StoreLinkError(DataError):
    """A store path is a link, not a regular file/directory, or hard-linked elsewhere."""


class UnsafePickleError(UserError, ValueError):
    """The pickle names a global or holds something other than plain data."""


class UnsafeName(UserError, ValueError):
    """A name holds a character no generated command may carry."""


class EncoderUnavailable(UserError, RuntimeError):
    """The requested encoder cannot be loaded (not installed offline, no hub access)."""


# Defined beside their owners, as UserErrors from here: `methods.base.OptionError` (the
# option builder owns it), `verifier.sandbox.SandboxError`, `serve.client.VerifierServiceError`
# and the trainers' `ConfigError` / `ArtifactError` (DataErrors). tests/cli/test_cli_errors.py
# checks that every exception class a user can meet is one of these.
