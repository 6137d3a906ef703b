"""Fixtures for the web tools' tests: local HTTP(S) servers on 127.0.0.1 that count the
connections they accept, and resolvers that answer what a test chooses.

A refusal test asserts ``server.connections == 0`` after the fetch failed: the guard
refused before any connection was made. Nothing here sleeps: a stalled handler waits on a
``threading.Event`` that the fixture sets at teardown.
"""

from __future__ import annotations

import contextlib
import datetime
import http.server
import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest


@dataclass
class Reply:
    """What a route answers."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    stall: bool = False
    """Send the headers and part of the body, then wait until the server is closed."""


@dataclass
class Seen:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Route = Callable[[Seen], Reply]


def fullwidth(text: str) -> str:
    """``text`` with its digits and dots in full-width forms (U+FF10.., U+FF0E), which
    UTS #46 maps back: browsers read ``\uff11\uff12\uff17.\uff10...`` as 127.0...."""
    table = {ord(str(digit)): 0xFF10 + digit for digit in range(10)}
    table[ord(".")] = 0xFF0E
    return text.translate(table)


class LocalServer:
    """A threaded HTTP server on 127.0.0.1 (optionally TLS) that counts its connections."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None, bind: str = "127.0.0.1") -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[Seen] = []
        self._connections = 0
        self._lock = threading.Lock()
        self.release = threading.Event()
        server_class = _Server6 if ":" in bind else _Server
        self._server = server_class((bind, 0), _Handler, self, ssl_context)
        self.bind = bind
        self.port = self._server.server_address[1]
        self.scheme = "https" if ssl_context is not None else "http"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()

    @property
    def connections(self) -> int:
        with self._lock:
            return self._connections

    def count_connection(self) -> None:
        with self._lock:
            self._connections += 1

    def record(self, seen: Seen) -> None:
        with self._lock:
            self.requests.append(seen)

    def url(self, path: str = "/", host: str | None = None) -> str:
        if host is None:
            host = f"[{self.bind}]" if ":" in self.bind else self.bind
        return f"{self.scheme}://{host}:{self.port}{path}"

    def route(self, path: str, reply: Reply | Route) -> None:
        if isinstance(reply, Reply):
            fixed = reply

            def answer(_seen: Seen) -> Reply:
                return fixed

            self.routes[path] = answer
        else:
            self.routes[path] = reply

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[http.server.BaseHTTPRequestHandler],
        owner: LocalServer,
        ssl_context: ssl.SSLContext | None,
    ) -> None:
        self.owner = owner
        self.ssl_context = ssl_context
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, object]:
        connection, address = super().get_request()
        self.owner.count_connection()
        if self.ssl_context is not None:
            connection = self.ssl_context.wrap_socket(
                connection, server_side=True, do_handshake_on_connect=False
            )
        return connection, address


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def handle(self) -> None:
        # A client that refused our certificate, or hung up: nothing to serve.
        with contextlib.suppress(ssl.SSLError, ConnectionError, OSError):
            super().handle()

    def _serve(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        seen = Seen(
            method=self.command,
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
        )
        owner.record(seen)
        route = owner.routes.get(self.path.partition("?")[0])
        reply = route(seen) if route is not None else Reply(404, b"no such route")
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body) + (1 if reply.stall else 0)))
        self.end_headers()
        self.wfile.write(reply.body)
        self.wfile.flush()
        if reply.stall:
            owner.release.wait()

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _serve


@pytest.fixture
def server() -> Iterator[LocalServer]:
    local = LocalServer()
    try:
        yield local
    finally:
        local.close()


def _ipv6_loopback_works() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.fixture
def server6() -> Iterator[LocalServer]:
    """A server on [::1]; skipped where this machine has no IPv6 loopback."""
    if not _ipv6_loopback_works():
        pytest.skip("no IPv6 loopback (::1) on this machine")
    local = LocalServer(bind="::1")
    try:
        yield local
    finally:
        local.close()


@dataclass
class Certificates:
    """A throwaway CA and a server certificate it signed for some names."""

    client_context: ssl.SSLContext
    server_context: ssl.SSLContext


def make_certificates(tmp_path: Path, names: list[str]) -> Certificates:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "clawlog test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    alt_names: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
    alt_names.append(x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")))
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    cert_file = tmp_path / "server.pem"
    key_file = tmp_path / "server.key"
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert_file, key_file)
    client_context = ssl.create_default_context(
        cadata=ca.public_bytes(serialization.Encoding.PEM).decode("ascii")
    )
    return Certificates(client_context=client_context, server_context=server_context)


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[LocalServer, ssl.SSLContext]]:
    """An HTTPS server whose certificate names ``secure.test`` (and 127.0.0.1), with the
    client context that trusts it."""
    certificates = make_certificates(tmp_path, ["secure.test"])
    local = LocalServer(certificates.server_context)
    try:
        yield local, certificates.client_context
    finally:
        local.close()


class ScriptedResolver:
    """Answers each name from a table (a list of answers: one per call, the last repeated)
    and records every question."""

    def __init__(self, table: dict[str, list[list[str]]] | None = None) -> None:
        self.table = table if table is not None else {}
        self.questions: list[tuple[str, int]] = []

    def answer(self, host: str, *answers: list[str]) -> None:
        self.table[host] = list(answers)

    async def __call__(self, host: str, port: int) -> list[str]:
        asked = sum(1 for name, _ in self.questions if name == host)
        self.questions.append((host, port))
        answers = self.table.get(host)
        if answers is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return answers[min(asked, len(answers) - 1)]


@pytest.fixture
def resolver() -> ScriptedResolver:
    return ScriptedResolver()
