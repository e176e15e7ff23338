"""What runs INSIDE the sandbox: the server (harness.py), the zygote, the test child and
their helpers. Standard library only (tests/verifier/test_verifier_inside.py checks it): each file is
copied or bound into the sandbox on its own (launch.SANDBOX_FILES) and imports its siblings
as top-level modules. The host imports only wire (the value encoding) and procs (the
/proc scan) from here, both stdlib-only too.
"""
