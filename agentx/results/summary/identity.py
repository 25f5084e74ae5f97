"""What makes runs comparable, as ``summary.json`` records it: the server under test as far as it
can be read (``server_identity``), the machine that measured it (``client_host``), the trace
replayed (``trace_fingerprint``, a key of its own) and the run's ``labels``. A run written by an
earlier agentx has none of them: each is then unknown (``None``, or no labels)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentx.results.base import Json, integer, items, need, obj, sub, text

Labels = tuple[tuple[str, str], ...]  # (name, value), sorted by name


def labels_of(d: Mapping[str, Any], key: str) -> Labels:
    """An object of strings (a run's labels, an info metric's labels), as sorted pairs."""
    m = sub(d, key)
    for k in m:
        text(m, k)
    return tuple(sorted((str(k), str(v)) for k, v in m.items() if v is not None))


@dataclass(frozen=True, slots=True)
class ServedModel:
    """One model ``/v1/models`` lists: its id, who owns it (``vllm``, ``sglang``, ``agentx``),
    and the context it takes (``max_model_len``, where the server says)."""

    id: str
    owned_by: str | None = None
    max_model_len: int | None = None

    def to_json(self) -> Json:
        return {"id": self.id, "owned_by": self.owned_by, "max_model_len": self.max_model_len}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ServedModel:
        return cls(need(text(d, "id"), "id"), text(d, "owned_by"), integer(d, "max_model_len"))


@dataclass(frozen=True, slots=True)
class InfoMetric:
    """An info gauge of the server's ``/metrics`` (``vllm:cache_config_info``, ``python_info``,
    ...): the build and configuration facts a server publishes as labels."""

    name: str
    labels: Labels

    def to_json(self) -> Json:
        return {"name": self.name, "labels": dict(self.labels)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> InfoMetric:
        return cls(need(text(d, "name"), "name"), labels_of(d, "labels"))


@dataclass(frozen=True, slots=True)
class ServerIdentity:
    """The server under test: its kind (``vllm``, ``sglang``, ``serve-sim``, ``unknown``), the
    version its ``/version`` answers, its HTTP ``Server`` header, the models it lists and the
    info gauges of its ``/metrics``."""

    kind: str | None = None
    version: str | None = None
    server_header: str | None = None
    models: tuple[ServedModel, ...] = ()
    info: tuple[InfoMetric, ...] = ()

    def to_json(self) -> Json:
        return {
            "kind": self.kind,
            "version": self.version,
            "server_header": self.server_header,
            "models": [m.to_json() for m in self.models],
            "info": [i.to_json() for i in self.info],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ServerIdentity:
        return cls(
            text(d, "kind"),
            text(d, "version"),
            text(d, "server_header"),
            tuple(ServedModel.from_json(obj(m, "models")) for m in items(d, "models")),
            tuple(InfoMetric.from_json(obj(i, "info")) for i in items(d, "info")),
        )


@dataclass(frozen=True, slots=True)
class ClientHost:
    """The machine that measured the run: its host name, operating system, Python, CPUs."""

    hostname: str | None = None
    platform: str | None = None
    python: str | None = None
    cpus: int | None = None

    def to_json(self) -> Json:
        return {
            "hostname": self.hostname,
            "platform": self.platform,
            "python": self.python,
            "cpus": self.cpus,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ClientHost:
        return cls(text(d, "hostname"), text(d, "platform"), text(d, "python"), integer(d, "cpus"))
