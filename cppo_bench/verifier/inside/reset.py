"""Between two tests of a kept child (warm.py): the process put back as a fresh child of the
zygote would find it (stdlib only, inside the sandbox).

A kept child must judge every program exactly as a fresh child per test would (issue 42):
nothing one test did may change the verdict of the next. What a fresh child starts from is
known: the state of the process just before the program's first test ran. `Fresh` records
that state once, and `Fresh.release`, run after each test's status is written and before the
child says it is done (so its CPU is the test's, and the server measures the next test's
memory from what is left), puts it back:

- fds 0-3 first become /dev/null, so that the program's file objects, closed or flushed
  while its garbage is collected, touch nothing of this test or the next (a fresh child
  drops their buffers at `_exit`; `input = open(0).readline` closed the next test's stdin);
  every other descriptor the program left is closed once its objects are gone;
- the program's globals are cleared and its cycles collected (a table held by a module
  whose globals form a cycle stayed allocated test after test: MLE), and the heap trimmed;
- the `sys`, `builtins` and `os` namespaces, sys.path and the import hooks, the modules
  that were loaded (a replaced entry is put back; a module the program made, with no spec,
  is dropped; modules it imported stay, as in the official harnesses), os.environ, signal
  handlers, the signal mask, interval timers, the umask, rlimits, the recursion, int-digit
  and switch limits, trace and profile hooks, faulthandler, tracemalloc, atexit handlers,
  the garbage collector's settings, numpy's global random state (a fresh seed).

Where it cannot be put back (a lowered hard rlimit, a pending signal, objects frozen by
gc.freeze, an audit hook, which no API removes), `release` says so and the child ends: the
next test forks a fresh one. What stays by design is the state of modules the program imported (their
attributes): the official harnesses run all of a program's tests in one process too.
"""

from __future__ import annotations

import _signal
import builtins
import gc
import os
import resource
import signal
import sys
from operator import is_

import nsutil

_MISSING = object()
_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
# every rlimit but the CPU one, which the server moves with each test (warm.WarmChild.begin)
_LIMITS = tuple(getattr(resource, n) for n in dir(resource)
                if n.startswith("RLIMIT_") and n != "RLIMIT_CPU")  # fmt: skip
_SIGNALS = tuple(s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP))


class _Snapshot:
    """A dict's items as they were: checked by identity (no program `__eq__` runs, which
    could claim to equal anything), at C speed (map), and put back in place."""

    def __init__(self, now: dict) -> None:
        self.now, self.then = now, dict(now)
        self.keys, self.values = tuple(self.then), tuple(self.then.values())

    def same(self) -> bool:
        now = self.now
        return len(now) == len(self.keys) and all(map(is_, map(now.get, self.keys), self.values))

    def put_back(self) -> None:
        if not self.same():
            now = self.now
            for key in [k for k in now if k not in self.then]:
                del now[key]
            now.update(self.then)


def _null_std_fds() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2, 3):
        if fd != null:
            os.dup2(null, fd)
    if null > 3:
        os.close(null)


class Fresh:
    """The process as the program's first test found it (see the module doc)."""

    def __init__(self) -> None:
        self.hooked = False
        real = sys.addaudithook

        def addaudithook(hook):  # (an audit hook cannot be removed: this child then ends)
            self.hooked = True
            return real(hook)

        sys.addaudithook = addaudithook
        freeze = gc.freeze

        def gc_freeze():  # (frozen objects are never collected: this child then ends. A
            # wrapper, since gc.get_freeze_count walks every frozen object: ~50 us a call)
            self.hooked = True
            freeze()

        gc.freeze = gc_freeze
        self.spaces = [_Snapshot(m.__dict__) for m in (sys, builtins, os)]
        self.lists = [(getattr(sys, n), list(getattr(sys, n)))
                      for n in ("path", "meta_path", "path_hooks")]  # fmt: skip
        self.modules = _Snapshot(sys.modules)
        self.environ = dict(os.environ._data)  # type: ignore[attr-defined]
        self.environ_str = dict(os.environ)
        self.signals = [_signal.getsignal(s) for s in _SIGNALS]  # (raw: no enum per call)
        self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        self.umask = os.umask(0o077)
        os.umask(self.umask)
        self.limits = {r: resource.getrlimit(r) for r in _LIMITS}
        self.recursion = sys.getrecursionlimit()
        self.digits = sys.get_int_max_str_digits()
        self.switch = sys.getswitchinterval()
        self.gc = (gc.isenabled(), gc.get_threshold())

    def release(self, g: dict, keep_fds: tuple[int, ...], nofile: int) -> bool:
        """After a test: put everything back (module doc). False: it cannot be, end the
        child. `keep_fds`: ours past fd 3 (the control socket)."""
        try:
            return self._release(g, keep_fds, nofile)
        except BaseException:  # (whatever the program left made it fail: a fresh child)
            return False

    def _release(self, g: dict, keep_fds: tuple[int, ...], nofile: int) -> bool:
        _null_std_fds()
        if self.hooked or signal.sigpending():  # (an audit hook, or gc.freeze: see __init__)
            return False
        for which in _TIMERS:  # (before any handler is put back: no alarm of its fires)
            signal.setitimer(which, 0)
        g.clear()
        for space in self.spaces:
            space.put_back()
        for now_list, then_list in self.lists:
            if len(now_list) != len(then_list) or any(
                a is not b for a, b in zip(now_list, then_list, strict=True)
            ):
                now_list[:] = then_list
        modules = sys.modules
        if not self.modules.same():
            for name in [n for n in modules if n not in self.modules.then]:
                if getattr(modules[name], "__spec__", None) is None:  # made by the program
                    del modules[name]
            for name, module in self.modules.then.items():
                if modules.get(name) is not module:
                    modules[name] = module
        if os.environ._data != self.environ:  # type: ignore[attr-defined]
            os.environ.clear()
            os.environ.update(self.environ_str)
        handlers = map(_signal.getsignal, _SIGNALS)
        if not all(map(is_, handlers, self.signals)):
            for signum, handler in zip(_SIGNALS, self.signals, strict=True):
                if _signal.getsignal(signum) is not handler:
                    _signal.signal(signum, handler)
        signal.set_wakeup_fd(-1)
        signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)
        os.umask(self.umask)
        for which, value in self.limits.items():
            if resource.getrlimit(which) != value:
                resource.setrlimit(which, value)  # (a lowered hard limit: ValueError, ends)
        sys.setrecursionlimit(self.recursion)
        sys.set_int_max_str_digits(self.digits)
        sys.setswitchinterval(self.switch)
        sys.settrace(None)
        sys.setprofile(None)
        for name, on, off in (("faulthandler", "is_enabled", "disable"),
                              ("tracemalloc", "is_tracing", "stop")):  # fmt: skip
            module = modules.get(name)
            if module is not None and getattr(module, on)():
                getattr(module, off)()
        atexit = modules.get("atexit")
        if atexit is not None:
            atexit._clear()
        enabled, threshold = self.gc
        gc.set_threshold(*threshold)
        gc.enable() if enabled else gc.disable()
        gc.collect()  # (the program's objects die here: their files write to /dev/null)
        low = 4
        for fd in sorted(keep_fds):
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, nofile)
        _null_std_fds()  # (again: a collected file object may have closed one of them, and
        # the next test's descriptors must not land on 0-3 before they are put there)
        trim = getattr(nsutil.LIBC, "malloc_trim", None)
        if trim is not None:  # the freed heap back to the kernel: the next test's baseline
            trim(0)
        np_random = modules.get("numpy.random")
        if np_random is not None:
            np_random.seed()  # a fresh seed, as a fresh interpreter's import draws one
        return True
