"""Content-Encoding decoders: one-shot for request bodies, incremental for streamed responses.

Capture's proxy forwards bytes untouched; these only produce the decoded copy that agentx
parses. Replay asks for ``identity`` but reads a compressed answer the same way (a server that
gzips its event stream anyway), so a capture of such a server replays.
"""

from __future__ import annotations

import sys
import zlib
from typing import Protocol

import brotli  # type: ignore[import-untyped]

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

SUPPORTED = ("gzip", "x-gzip", "deflate", "br", "zstd", "identity")
# what a corrupt body raises from StreamDecoder.feed
DECODE_ERRORS: tuple[type[Exception], ...] = (zlib.error, brotli.error, zstd.ZstdError)


class _Step(Protocol):
    def feed(self, data: bytes) -> bytes: ...


class _Zlib:
    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._d: zlib._Decompress | None = None
        self._raw_tried = False

    def feed(self, data: bytes) -> bytes:
        if self._d is None:
            # gzip, or zlib-wrapped deflate; a raw deflate stream is retried below
            self._d = zlib.decompressobj(16 + zlib.MAX_WBITS if self._gzip else zlib.MAX_WBITS)
        try:
            return self._d.decompress(data)
        except zlib.error:
            if self._gzip or self._raw_tried:
                raise
            self._raw_tried = True
            self._d = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._d.decompress(data)


class _Brotli:
    def __init__(self) -> None:
        self._d = brotli.Decompressor()

    def feed(self, data: bytes) -> bytes:
        out: bytes = self._d.process(data)
        return out


class _Zstd:
    def __init__(self) -> None:
        self._d = zstd.ZstdDecompressor()

    def feed(self, data: bytes) -> bytes:
        # A zstd body may hold several frames; start a new decompressor after each one.
        out = bytearray()
        while data:
            if self._d.eof:
                self._d = zstd.ZstdDecompressor()
            out += self._d.decompress(data)
            data = self._d.unused_data if self._d.eof else b""
        return bytes(out)


def _step(name: str) -> _Step | None:
    if name in ("gzip", "x-gzip"):
        return _Zlib(gzip=True)
    if name == "deflate":
        return _Zlib(gzip=False)
    if name == "br":
        return _Brotli()
    if name == "zstd":
        return _Zstd()
    if name in ("", "identity"):
        return None
    raise ValueError(f"unsupported content-encoding {name!r}")


class StreamDecoder:
    """Decodes a body chunk by chunk, for any ``Content-Encoding`` list (applied in order)."""

    def __init__(self, content_encoding: str | None) -> None:
        names = [n.strip().lower() for n in (content_encoding or "").split(",") if n.strip()]
        # "gzip, br" means gzip was applied first: undo the last one first
        steps = [_step(n) for n in reversed(names)]
        self._steps = [s for s in steps if s is not None]

    @property
    def identity(self) -> bool:
        return not self._steps

    def feed(self, data: bytes) -> bytes:
        for s in self._steps:
            if not data:
                break
            data = s.feed(data)
        return data


def decode_body(raw: bytes, content_encoding: str | None) -> bytes:
    """The decoded body; raises ``ValueError`` for an unknown or corrupt encoding."""
    dec = StreamDecoder(content_encoding)
    if dec.identity:
        return raw
    try:
        return dec.feed(raw)
    except DECODE_ERRORS as exc:
        raise ValueError(f"cannot decode {content_encoding} body: {exc}") from None
