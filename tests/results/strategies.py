"""Hypothesis strategies for the result values: any tree of a schema's dataclasses, built from
their fields' types, with what JSON can hold (finite floats, 64-bit integers, UTF-8 text) and
what the schema says (a percentile level its key spells back, an arrival unit, a block size)."""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from agentx.core.percentiles import CONTRACT_QS, P
from agentx.results.baseline import RunIdentity
from agentx.results.routing import ReplicaFigures
from agentx.results.runstart import RunStart
from agentx.results.stats import BlockSizeFigures, Stats
from agentx.results.summary import Summary
from agentx.results.summary.identity import InfoMetric
from agentx.results.summary.run import ARRIVAL_UNITS, Arrivals
from agentx.results.summary.server import CounterSeries, ServerBlock
from agentx.results.sweep import SweepPoint
from agentx.results.trend import TrendPoint

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=6)
floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
ints = st.integers(-(2**53), 2**53)
json_scalars = st.none() | st.booleans() | ints | floats | text
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
# levels --percentiles takes whose key (p95, p99.9) reads back as the same number
LEVELS = st.lists(
    st.sampled_from([1.0, 5.0, 25.0, 75.0, 95.0, 99.5, 99.9, 99.99, 100.0]), unique=True
).map(sorted)

maybe_float = st.none() | floats


def _p() -> st.SearchStrategy[P]:
    return st.builds(
        lambda stats, extra: P(*stats, extra=tuple((q, v) for q, v in extra)),
        st.tuples(maybe_float, maybe_float, maybe_float, maybe_float, maybe_float),
        LEVELS.flatmap(lambda qs: st.tuples(*(st.tuples(st.just(q), maybe_float) for q in qs))),
    )


def _counter() -> st.SearchStrategy[CounterSeries]:
    # counters read back as floats (Prometheus' sample values), labels in sorted order
    labels = st.dictionaries(text, text, max_size=2).map(lambda d: tuple(sorted(d.items())))
    return st.builds(CounterSeries, text, labels, st.none() | floats, floats, floats)


# labels are a mapping held as its pairs in name order
labels = st.dictionaries(text, text, max_size=2).map(lambda d: tuple(sorted(d.items())))


def _replica() -> st.SearchStrategy[ReplicaFigures]:
    # a replay's figures (measured: every key) or an engine run's (the first six only)
    maybe_int = st.none() | ints
    head = st.tuples(ints, maybe_int, maybe_int, maybe_float, maybe_float, maybe_float)
    simulated = head.map(lambda h: ReplicaFigures(*h))
    measured = st.builds(
        lambda h, e, n, rates: ReplicaFigures(*h, True, e, n[0], n[1], *rates),
        head,
        st.none() | text,
        st.tuples(maybe_int, maybe_int),
        st.tuples(*(maybe_float for _ in range(7))),
    )
    return simulated | measured


def _replica_pages() -> st.SearchStrategy[tuple[ServerBlock, ...] | None]:
    # a routed run's pages, one level deep (a replica's page has no replicas of its own)
    page = st.builds(
        lambda src, qh, url, cs, samples, window: ServerBlock(
            src, *qh, url=url, counters=cs, kv_cache_usage_samples=samples, window_t_ns=window
        ),
        st.none() | text,
        st.tuples(maybe_float, maybe_float),
        st.none() | text,
        st.none() | st.lists(_counter(), max_size=2).map(tuple),
        st.lists(st.tuples(ints, floats), max_size=2).map(tuple),
        st.none() | st.tuples(ints, ints),
    )
    return st.none() | st.lists(page, max_size=2).map(tuple)


OVERRIDES: dict[type, st.SearchStrategy[Any]] = {
    P: _p(),
    CounterSeries: _counter(),
    ReplicaFigures: _replica(),
}
# fields whose values the schema constrains beyond their type
FIELDS: dict[tuple[type, str], st.SearchStrategy[Any]] = {
    (Arrivals, "arrival_unit"): st.sampled_from(ARRIVAL_UNITS),
    (ServerBlock, "kv_cache_usage_samples"): st.lists(st.tuples(ints, floats), max_size=3).map(
        tuple
    ),
    (ServerBlock, "replicas"): _replica_pages(),
    (SweepPoint, "results_dir"): text.filter(bool),
    (Summary, "labels"): labels,
    (InfoMetric, "labels"): labels,
    (RunIdentity, "labels"): labels,
    (TrendPoint, "labels"): labels,
    (RunStart, "labels"): labels,
    (Stats, "block_sizes"): st.dictionaries(
        st.integers(1, 1 << 20), st.builds(BlockSizeFigures, ints, ints, ints), max_size=2
    ),
}
assert 50.0 in CONTRACT_QS  # the levels above are the extra ones only


def of(tp: Any) -> st.SearchStrategy[Any]:
    """Values of the annotation ``tp``."""
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return value(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(of(a) for a in args))
    if tp is type(None):
        return st.none()
    if tp is Any:
        return json_values
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(tp)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return ints
    if tp is float:
        return floats
    if tp is str:
        return text
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(of(args[0]), max_size=3).map(tuple)
        return st.tuples(*(of(a) for a in args))
    if origin in (dict, Mapping):
        return st.dictionaries(of(args[0]), of(args[1]), max_size=3)
    raise TypeError(f"no strategy for {tp!r}")


def value[T](cls: type[T]) -> st.SearchStrategy[T]:
    """Any ``cls``: each field from its type (or :data:`FIELDS`)."""
    if cls in OVERRIDES:
        return OVERRIDES[cls]
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        given = FIELDS.get((cls, f.name))
        kwargs[f.name] = of(hints[f.name]) if given is None else given
    return st.builds(cls, **kwargs)
