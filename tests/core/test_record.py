"""A row's inter-token gaps: one read-only int64 array that behaves as a sequence of ints."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from agentx.core.record import NO_GAPS, Gaps, RequestRecord


def record(**kw: object) -> RequestRecord:
    return RequestRecord("r", "s", 0, "sess", "t", 0, False, 1, 2, 3, 200, True, **kw)  # type: ignore[arg-type]


def test_gaps_are_a_sequence_of_python_ints() -> None:
    g = Gaps([5, 6, 7])
    assert len(g) == 3 and list(g) == [5, 6, 7] and g[1] == 6 and g[-1] == 7
    assert all(type(x) is int for x in g) and type(g[0]) is int
    assert g[1:] == Gaps((6, 7)) and isinstance(g[1:], Gaps)
    assert g == (5, 6, 7) and g == [5, 6, 7] and g != (5, 6) and g != Gaps([5, 6, 8])
    assert hash(g) == hash((5, 6, 7)) and 6 in g and g.index(7) == 2
    assert " ".join(map(str, g)) == "5 6 7"  # as the CSV export writes them
    assert not NO_GAPS and len(Gaps()) == 0


def test_gaps_wrap_an_int64_array_without_copying_it_and_stay_read_only() -> None:
    a = np.arange(1000, dtype=np.int64)
    g = Gaps(a[10:20])
    assert np.shares_memory(g.ns, a) and g.ns.dtype == np.int64
    with pytest.raises(ValueError):
        g.ns[0] = 1
    assert a.flags.writeable  # the caller's array is left as it was


def test_records_hold_gaps_whatever_sequence_they_are_given() -> None:
    r = record(itl_ns=(1, 2, 3))
    assert isinstance(r.itl_ns, Gaps) and r == record(itl_ns=[1, 2, 3])
    assert record().itl_ns is NO_GAPS and hash(r) == hash(record(itl_ns=Gaps([1, 2, 3])))
    back = pickle.loads(pickle.dumps(r))
    assert back == r and isinstance(back.itl_ns, Gaps)
