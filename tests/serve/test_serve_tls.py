"""`cppo-bench serve --ssl-certfile --ssl-keyfile`: https by uvicorn, with a self-signed
certificate made here (the `cryptography` package, else the `openssl` command): a client
that trusts it (SSL_CERT_FILE) verifies through it, with the token; one that does not is
refused at once, in one line; plain http to the port gets no verdict; a half or bad pair
is one line at start-up."""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from serve_process import ROOT, Service  # noqa: E402

import cppo_bench as cb  # noqa: E402
from cppo_bench.problem import Problem  # noqa: E402
from cppo_bench.problem import Test as Case  # noqa: E402
from cppo_bench.serve.client import VerifierServiceError  # noqa: E402

TOKEN = "tls-test-token-0123456789abcdef"


def _with_cryptography(cert: Path, key: Path) -> bool:
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        return False
    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    alt = x509.SubjectAlternativeName(
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    )
    made = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(private.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(alt, critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(private, hashes.SHA256())
    )  # fmt: skip
    cert.write_bytes(made.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))  # fmt: skip
    return True


def _with_openssl(cert: Path, key: Path) -> bool:
    openssl = shutil.which("openssl")
    if openssl is None:
        return False
    proc = subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return True


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    if not (_with_cryptography(cert, key) or _with_openssl(cert, key)):
        pytest.skip("neither the cryptography package nor the openssl command is here to "
                    "make a self-signed certificate")  # fmt: skip
    key.chmod(0o600)
    return cert, key


@pytest.fixture(scope="module")
def https(pair):
    cert, key = pair
    svc = Service("--workers", "1", "--ssl-certfile", str(cert), "--ssl-keyfile", str(key),
                  env={"CPPO_SERVE_TOKEN": TOKEN})  # fmt: skip
    yield svc
    svc.stop()


ECHO = Problem("t", "echo", "", tests=(Case("1\n", "1\n"),), checker="lcb")


def test_a_client_that_trusts_the_certificate_verifies_over_https(https, pair, monkeypatch):
    assert https.url.startswith("https://127.0.0.1:")  # the ready line names the scheme
    monkeypatch.setenv("SSL_CERT_FILE", str(pair[0]))  # the client's trust: this certificate
    client = cb.VerifierClient(https.url, token=TOKEN, timeout=300)
    got = client.verify([ECHO, ECHO], ["print(input())", "print(2)"])
    assert [r.verdict for r in got] == ["AC", "WA"]
    with pytest.raises(VerifierServiceError) as err:  # TLS does not replace the token
        cb.VerifierClient(https.url, token=TOKEN[:-1] + "x", retries=0).verify([ECHO], ["1"])
    assert err.value.status == 401


def test_an_untrusted_certificate_is_refused_at_once(https, monkeypatch, tmp_path) -> None:
    other = tmp_path / "empty.pem"
    other.write_text("")
    monkeypatch.setenv("SSL_CERT_FILE", str(other))  # trusts nothing
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    client = cb.VerifierClient(https.url, token=TOKEN, retries=5, backoff_s=30)
    with pytest.raises(VerifierServiceError, match="CERTIFICATE_VERIFY_FAILED") as err:
        client.verify([ECHO], ["print(input())"])  # not retried: 5 x 30 s would be minutes
    assert "\n" not in str(err.value)


def test_plain_http_to_the_tls_port_gets_no_verdict(https) -> None:
    plain = "http://" + https.url.split("://", 1)[1]
    req = urllib.request.Request(plain + "/health")
    with pytest.raises((urllib.error.URLError, OSError, http.client.HTTPException)):
        with urllib.request.urlopen(req, timeout=60) as resp:
            resp.read()


@pytest.mark.parametrize("which", ["half", "bad"])
def test_a_half_or_bad_pair_is_one_line_at_start(pair, tmp_path, which) -> None:
    cert, key = pair
    if which == "half":
        args, says = ["--ssl-certfile", str(cert)], "go together"
    else:
        wrong = tmp_path / "wrong.pem"
        wrong.write_text("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
        args, says = ["--ssl-certfile", str(cert), "--ssl-keyfile", str(wrong)], "cannot load"
    proc = subprocess.run([sys.executable, "-m", "cppo_bench", "serve", "--port", "0", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], proc.stderr
