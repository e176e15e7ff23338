"""The one error hierarchy of cppo_bench.

`DataError` is the base of every error the user can fix (bad input data, a bad option, a
missing model, a locked run): the CLI prints its one-line message, never a traceback. The
other classes keep the standard base a caller may already catch (`ValueError`, `KeyError`)
and are re-exported where they were defined before, so existing imports keep working.
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "DataError",
    "EncoderUnavailable",
    "KeyValueError",
    "ModelLoadError",
    "RunLockedError",
    "StoreLinkError",
    "UnknownNameError",
    "UnsafeName",
    "UnsafePickleError",
]


class DataError(ValueError):
    """Bad input data: the message names the file/record and what is wrong."""


class UnknownNameError(KeyError):
    """Raised for a name no entry was registered under; the message lists the known names."""

    def __str__(self) -> str:  # KeyError quotes its message; we want plain text
        return str(self.args[0])


class KeyValueError(ValueError):
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


class UnsafePickleError(ValueError):
    """The pickle names a global or holds something other than plain data."""


class UnsafeName(ValueError):
    """A name holds a character no generated command may carry."""


class EncoderUnavailable(RuntimeError):
    """The requested encoder cannot be loaded (not installed offline, no hub access)."""


# Not here on purpose: `methods.base.OptionError` (the option builder of issue 34 item 3 owns
# it), `verifier.sandbox.SandboxError` (the sandbox side imports the standard library only),
# and the trainers' `ConfigError` / `ArtifactError`, which subclass DataError from here.
