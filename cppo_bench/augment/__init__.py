"""Stronger tests (EvalPlus's idea for stdin and call-based benchmarks): new test inputs made
by mutating a problem's own test inputs, each kept only where the problem's reference
solutions agree on its output in the sandbox.

Modules: formats (the stdin input format inferred from a problem's tests), mutate_stdin and
mutate_call (candidate inputs), execute (running programs on inputs in the verifier's
sandbox), oracle (which candidates become tests), store (the test set on disk), generate
(one problem, start to end), apply (a stored test set joined to loaded problems).
"""
