"""TLS for the tests' servers: a self-signed certificate for 127.0.0.1, made on the spot, and
serve-sim's application served over it on a thread (recording each request's headers)."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import threading
from pathlib import Path
from types import TracebackType

from aiohttp import web

from agentx.serve_sim import SimConfig
from agentx.serve_sim.app import create_app, warm_up


def self_signed(tmp: Path) -> tuple[ssl.SSLContext, Path]:
    """(the server's context, the certificate as a PEM file a client may trust): a self-signed
    certificate for the IP address 127.0.0.1, valid from yesterday to tomorrow."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = tmp / "cert.pem"
    key_pem = tmp / "key.pem"
    cert_pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_pem, key_pem)
    return server, cert_pem


class TlsSim:
    """serve-sim (fast) over TLS on 127.0.0.1, on a thread with its own loop; ``seen`` holds
    each request's method, path and headers (names in lower case), in arrival order.

    ``with TlsSim(server_ctx) as sim: ... sim.url``
    """

    def __init__(self, tls: ssl.SSLContext) -> None:
        self._tls = tls
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.url = ""
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        app = create_app(SimConfig.of(port=0, fast=True))

        @web.middleware
        async def record(request: web.Request, handler: web.RequestHandler) -> web.StreamResponse:
            headers = {k.lower(): v for k, v in request.headers.items()}
            self.seen.append((request.method, request.path, headers))
            return await handler(request)

        app.middlewares.append(record)
        await warm_up(app)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=self._tls)
        await site.start()
        self.url = f"https://127.0.0.1:{runner.addresses[0][1]}"
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await runner.cleanup()

    def __enter__(self) -> TlsSim:
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the TLS server did not start")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
