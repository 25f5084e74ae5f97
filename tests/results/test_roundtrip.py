"""Every value of every result schema survives JSON: ``from_json(to_json(x)) == x`` through
orjson, for any tree hypothesis builds of it (``strategies.py``), and writing it again gives the
same bytes."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentx.results
from agentx.results.simulate import RecordedSimulation, ReplaySimulation, simulation_from_json

from .strategies import value


def _schema_types() -> list[type[Any]]:
    found: dict[str, type[Any]] = {}
    for info in pkgutil.walk_packages(agentx.results.__path__, "agentx.results."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and dataclasses.is_dataclass(obj)
                and obj.__module__ == module.__name__
                and hasattr(obj, "to_json")
            ):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [found[k] for k in sorted(found)]


TYPES = _schema_types()


def test_every_value_has_both_directions() -> None:
    assert len(TYPES) > 40
    for cls in TYPES:
        assert callable(getattr(cls, "from_json", None)), cls


@pytest.mark.parametrize(
    "cls", TYPES, ids=lambda c: f"{c.__module__.split('.', 2)[2]}.{c.__name__}"
)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_from_json_inverts_to_json(cls: type[Any], data: st.DataObject) -> None:
    x = data.draw(value(cls))
    raw = orjson.dumps(x.to_json())
    back = cls.from_json(orjson.loads(raw))
    assert back == x
    assert orjson.dumps(back.to_json()) == raw


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(value(RecordedSimulation), value(ReplaySimulation)))
def test_either_simulate_timeline_is_read_as_itself(
    x: RecordedSimulation | ReplaySimulation,
) -> None:
    assert simulation_from_json(orjson.loads(orjson.dumps(x.to_json()))) == x
