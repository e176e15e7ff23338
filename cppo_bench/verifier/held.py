"""The raw outputs of test runs that wait to be judged (`all_tests`: see pool.py).

Under `all_tests` a call judges nothing until every one of its programs has run, so the
outputs of all its tests wait here: in memory up to a budget, past it in one unnamed
temporary file (gone when closed, or when the process dies), so that a call whose programs
print tens of MiB a test holds disk, not the host's memory.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from dataclasses import dataclass, replace
from typing import IO

from cppo_bench.util.termsafe import warn
from cppo_bench.verifier.sandbox import TestRun

log = logging.getLogger("cppo_bench.verifier")

MEMORY_BYTES = 256 << 20  # outputs held in memory, all workers of a call together
SMALL = 64 << 10  # an output this small always stays in memory (no file round trip)


@dataclass(frozen=True)
class _Spooled:
    offset: int
    length: int


class Spool:
    """Bytes kept until judged; thread-safe (every worker of a call puts, one thread gets)."""

    def __init__(self, memory_bytes: int | None = None) -> None:
        self.memory_bytes = MEMORY_BYTES if memory_bytes is None else memory_bytes
        self._lock = threading.Lock()
        self._in_memory = 0
        self._file: IO[bytes] | None = None
        self._end = 0
        self._warned = False

    def put(self, data: bytes) -> bytes | _Spooled:
        with self._lock:
            if len(data) <= SMALL or self._in_memory + len(data) <= self.memory_bytes:
                self._in_memory += len(data)
                return data
            try:
                if self._file is None:
                    self._file = tempfile.TemporaryFile(prefix="cppo-held-")
                offset = self._end
                self._file.seek(offset)
                self._file.write(data)
                self._file.flush()
                self._end += len(data)
                return _Spooled(offset, len(data))
            except OSError as exc:  # (a full disk: memory it is, said once)
                if not self._warned:
                    self._warned = True
                    warn(log, f"verifier: cannot spool outputs awaiting judgement ({exc}); "
                              "keeping them in memory")  # fmt: skip
                self._in_memory += len(data)
                return data

    def get(self, piece: bytes | _Spooled) -> bytes:
        if isinstance(piece, bytes):
            return piece
        with self._lock:
            if self._file is None:
                raise OSError("the spool of outputs awaiting judgement is closed")
            out = os.pread(self._file.fileno(), piece.length, piece.offset)
        if len(out) != piece.length:  # (our own file, unnamed: nobody else can shorten it)
            raise OSError("the spool of outputs awaiting judgement was cut short")
        return out

    def hold(self, run: TestRun) -> HeldRun:
        return HeldRun(replace(run, stdout=b"", status=b""), self.put(run.stdout),
                       self.put(run.status), self)  # fmt: skip

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


@dataclass(frozen=True)
class HeldRun:
    """One test run whose outputs wait in a Spool."""

    facts: TestRun  # everything but stdout and status
    stdout: bytes | _Spooled
    status: bytes | _Spooled
    spool: Spool

    def load(self) -> TestRun:
        return replace(self.facts, stdout=self.spool.get(self.stdout),
                       status=self.spool.get(self.status))  # fmt: skip
