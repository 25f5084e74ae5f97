"""The failures of an HTTP/1.1 exchange: the :class:`HTTPTransportError` family. The caller
turns them into typed rows."""

from __future__ import annotations


class HTTPTransportError(Exception):
    """The request could not be completed at the HTTP level."""


class ConnectError(HTTPTransportError):
    """No connection could be made (refused, unreachable, DNS, TLS handshake)."""


class ConnectTimeout(HTTPTransportError):
    """The connection was not made within the connect timeout."""


class ConnectionClosed(HTTPTransportError):
    """The server closed (or reset) the connection before the response ended."""


class MalformedResponse(HTTPTransportError):
    """What came back is not HTTP/1.1."""
