"""Command-line options declared once, on the field of the options dataclass each one fills.

A field made with :func:`option` carries its :class:`Flag`: the names a user types, the help
text and help panel, a metavar, a range, hidden old spellings, and how typed text becomes the
field's value (``parse``) or which :class:`~enum.StrEnum` it must be one of (``choices``). The
field's own annotation and default are the flag's type and default. A field made with
:func:`group` embeds another options dataclass: its flags are the embedding class's too (a
``panels`` filter exposes only some of them).

The flags of a class and of the groups it embeds share one flat namespace of field names:
:func:`build` makes the class from flat values (what a command line, a preset or a caller
gives, by field name), :func:`flat` turns an instance back into them, :func:`declared` lists
the flags with the field each one fills. The command line (``agentx.cli.declared``) builds its
options from :func:`declared`; nothing here knows the CLI library.

Typed text that several flags share a rule for is parsed here, once: token counts
(:func:`parse_tokens`, ``64K``, ``1.5M``, ``64Ki``; :func:`parse_token_list`) for every flag
that takes one.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from enum import StrEnum
from typing import Any, cast

from agentx.core.errors import AgentxError, UsageError

_FLAG = "agentx.flag"
_GROUP = "agentx.group"
# the largest integer any option takes (and, negated, the smallest): int64, what summary.json
# (orjson) and Parquet columns hold; a count or seed beyond it is a typo
MAX_INT = 2**63 - 1


class Panel(StrEnum):
    """The help panels options are grouped in; ``--help`` shows them in this order."""

    SERVER = "Server"
    SERVING = "Serving"
    CAPACITY = "KV cache"
    TIMELINE = "Timeline"
    ENGINE = "Engine"
    TRACE = "Trace"
    LOAD = "Load"
    SCHEDULE = "Schedule"
    SCENARIO = "AgentX scenario"
    GATES = "Pass/fail gates"
    OPEN_LOOP = "Open loop"
    REQUESTS = "Requests"
    SERVER_METRICS = "Server metrics"
    TOKENIZER = "Tokenizer"
    PROXY = "Proxy"
    RECORDING = "Recording"
    CLEANING = "Cleaning"
    CONVERSION = "Conversion"
    DATASET = "Dataset"
    SCALE_OUT = "Scale-out"
    REPORT = "Report"
    OUTPUT = "Output"
    COST = "Cost and margin"


@dataclass(frozen=True, slots=True)
class Flag:
    """One option as a user types it. ``names``: its spellings (``"--salt/--no-salt"`` for an
    on/off pair); ``hidden``: old spellings still read, not shown. ``parse`` turns the typed text
    into the field's value (the option is then typed as text, and not given means the field's
    default); ``choices``: the field is one of these values (typed as text, shown as
    ``a|b|c``); ``invert``: an on-flag that sets the field false (``--no-metrics``);
    ``multiple``: the option may be given several times, ``parse`` gets the list of texts. A
    ``parse`` that raises ``ValueError`` is a usage error naming the flag. ``min``/``max``: the
    range of a number, checked on the value (:meth:`value`), as is :data:`MAX_INT` for every
    integer."""

    names: tuple[str, ...]
    help: str
    panel: Panel
    metavar: str | None = None
    min: float | None = None
    max: float | None = None
    hidden: tuple[str, ...] = ()
    envvar: str | None = None
    show_default: bool = True
    parse: Callable[[Any], Any] | None = None
    choices: type[StrEnum] | None = None
    invert: bool = False
    multiple: bool = False

    @property
    def name(self) -> str:
        """The spelling messages use: the first long name (``--salt`` of ``--salt/--no-salt``)."""
        long = [n for n in self.names if n.startswith("--")] or list(self.names)
        return long[0].split("/")[0]

    def value(self, typed: Any) -> Any:
        """What the field gets from what the user typed (or a config file gave): parsed, and a
        number checked against the flag's range (:meth:`check_range`)."""
        if self.invert:
            return not typed
        if self.parse is not None:
            try:
                return self.check_range(self.parse(typed))
            except AgentxError:
                raise
            except ValueError as exc:
                raise UsageError(f"{self.name}: {exc}") from None
        if self.choices is not None:
            return choice(self.choices, typed, self.name)
        return self.check_range(typed)

    def check_range(self, value: Any) -> Any:
        """``value`` when it is no number, or a number within ``min``..``max`` (an integer also
        within :data:`MAX_INT`: what ``summary.json`` and Parquet hold); else the one-line
        :class:`UsageError` naming the flag and its range."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return value
        low, high = self.min, self.max
        if isinstance(value, int):
            low = -MAX_INT if low is None else low
            high = MAX_INT if high is None else min(high, MAX_INT)
        # written so that NaN, which compares false with everything, is out of every range
        if (low is None or value >= low) and (high is None or value <= high):
            return value
        if self.min is not None and self.max is not None:  # both declared: the whole range
            bound = f"from {_number(self.min)} to {_number(self.max)}"
        elif low is not None and not value >= low:
            bound = f"at least {_number(low)}"
        else:
            assert high is not None
            bound = f"at most {_number(high)}"
        shown = str(value) if len(str(value)) <= 30 else f"a {len(str(value))}-digit number"
        raise UsageError(f"{self.name} must be {bound}, got {shown}")


def _number(bound: float) -> str:
    """A range's bound as a user would type it: ``1``, ``0.5``, ``9223372036854775807``."""
    if isinstance(bound, int):
        return str(bound)
    return str(int(bound)) if bound.is_integer() else f"{bound:g}"


def flag(
    *names: str,
    help: str,
    panel: Panel,
    metavar: str | None = None,
    min: float | None = None,
    max: float | None = None,
    hidden: tuple[str, ...] = (),
    envvar: str | None = None,
    show_default: bool = True,
    parse: Callable[[Any], Any] | None = None,
    choices: type[StrEnum] | None = None,
    invert: bool = False,
    multiple: bool = False,
) -> Flag:
    """A :class:`Flag` of its own, for an option several unrelated classes (or a command)
    take: ``option(None, flag=TOKENIZER)``."""
    if choices is not None and metavar is None:
        metavar = "|".join(choices)
    return Flag(
        names,
        help,
        panel,
        metavar,
        min,
        max,
        hidden,
        envvar,
        show_default,
        parse,
        choices,
        invert,
        multiple,
    )


def option[T](default: T, *names: str, flag: Flag | None = None, repr: bool = True, **kw: Any) -> T:
    """A dataclass field declared as a command-line option (``kw``: :func:`flag`'s; ``repr``:
    :func:`dataclasses.field`'s)."""
    declared = flag if flag is not None else _flag(names, kw)
    return field(default=default, repr=repr, metadata={_FLAG: declared})


def option_factory[T](factory: Callable[[], T], *names: str, **kw: Any) -> T:
    """:func:`option` with a mutable default made per instance."""
    return field(default_factory=factory, metadata={_FLAG: _flag(names, kw)})


def required(*names: str, **kw: Any) -> Any:
    """A field without a default, declared as a required option."""
    return field(metadata={_FLAG: _flag(names, kw)})


def group[T](cls: type[T], *, panels: Collection[Panel] | None = None) -> T:
    """A field that embeds the options dataclass ``cls`` (its defaults). ``panels``: only the
    flags of these panels are the embedding class's; the others keep their defaults."""
    meta = {_GROUP: (cls, None if panels is None else frozenset(panels))}
    return field(default_factory=cls, metadata=meta)


def _flag(names: tuple[str, ...], kw: dict[str, Any]) -> Flag:
    return flag(*names, **kw)


# -- what a class declares -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Declared:
    """A flag and the field it fills: ``name`` in the flat namespace, ``owner`` the class that
    declares it, ``default`` its default (``MISSING`` when required)."""

    name: str
    flag: Flag
    owner: type
    default: Any


def _group_of(f: dataclasses.Field[Any]) -> tuple[type, frozenset[Panel] | None] | None:
    meta = f.metadata.get(_GROUP)
    return None if meta is None else cast(tuple[type, frozenset[Panel] | None], meta)


def flag_of(f: dataclasses.Field[Any]) -> Flag | None:
    return cast(Flag | None, f.metadata.get(_FLAG))


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def _scope(
    outer: frozenset[Panel] | None, only: frozenset[Panel] | None
) -> frozenset[Panel] | None:
    """The panels a group exposes inside a group that exposes ``outer`` (``None``: all)."""
    if outer is None:
        return only
    return outer if only is None else outer & only


def _exposed(f: dataclasses.Field[Any], panels: frozenset[Panel] | None) -> bool:
    """Whether a field of a group exposing ``panels`` takes flat values (the others keep their
    defaults: a filtered group's fields that are no option, or an option of another panel)."""
    fl = flag_of(f)
    return panels is None or (fl is not None and fl.panel in panels)


def _claims(
    cls: type, panels: frozenset[Panel] | None = None
) -> Iterator[tuple[str, dataclasses.Field[Any], type]]:
    """Every field ``cls`` takes from flat values: (its flat name, the field, its owner)."""
    for f in fields(cast(Any, cls)):
        nested = _group_of(f)
        if nested is not None:
            yield from _claims(nested[0], _scope(panels, nested[1]))
        elif _exposed(f, panels):
            yield f.name, f, cls


def names(cls: type) -> tuple[str, ...]:
    """The flat names ``cls`` takes (its own fields and its groups'), in declaration order."""
    seen: list[str] = []
    for name, _f, owner in _claims(cls):
        if name in seen:
            raise TypeError(f"{cls.__name__}: {name!r} is declared twice ({owner.__name__})")
        seen.append(name)
    return tuple(seen)


def declared(cls: type) -> Iterator[Declared]:
    """The flags of ``cls`` and of the groups it embeds, in declaration order."""
    names(cls)  # no name twice
    for name, f, owner in _claims(cls):
        fl = flag_of(f)
        if fl is not None:
            yield Declared(name, fl, owner, _default(f))


def build[T](cls: type[T], values: Mapping[str, Any]) -> T:
    """``cls`` from flat values by field name; a group takes its own names from the same
    values; a name not given keeps its default. An unknown name is a ``TypeError``."""
    unknown = set(values) - set(names(cls))
    if unknown:
        raise TypeError(f"{cls.__name__} takes no {', '.join(sorted(unknown))}")
    return _build(cls, values, None)


def _build[T](cls: type[T], values: Mapping[str, Any], panels: frozenset[Panel] | None) -> T:
    kwargs: dict[str, Any] = {}
    for f in fields(cast(Any, cls)):
        nested = _group_of(f)
        if nested is not None:
            kwargs[f.name] = _build(nested[0], values, _scope(panels, nested[1]))
        elif _exposed(f, panels) and f.name in values:
            kwargs[f.name] = values[f.name]
    return cls(**kwargs)


def flat(obj: object) -> dict[str, Any]:
    """An instance as flat values, groups spliced in where they are declared (the inverse of
    :func:`build`); values are :func:`dataclasses.asdict`'s."""
    return _flat(obj, None)


def _flat(obj: object, panels: frozenset[Panel] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(cast(Any, obj)):
        value = getattr(obj, f.name)
        nested = _group_of(f)
        if nested is not None:
            out.update(_flat(value, _scope(panels, nested[1])))
        elif not _exposed(f, panels):
            continue
        elif is_dataclass(value) and not isinstance(value, type):
            out[f.name] = dataclasses.asdict(value)
        else:
            out[f.name] = copy.deepcopy(value)
    return out


def command_args(obj: object, default: object) -> list[str]:
    """Command-line arguments that reproduce ``obj``: each declared option whose value differs
    from ``default``'s (an on-flag by its name alone)."""
    args: list[str] = []
    mine, base = flat(obj), flat(default)
    for d in declared(type(obj)):
        value = mine[d.name]
        if value == base[d.name] or value is None:
            continue
        if isinstance(value, bool):
            on, _, off = d.flag.names[0].partition("/")
            if value != d.flag.invert:
                args.append(on)
            elif off:
                args.append(off)
            continue
        args += [d.flag.name, str(value)]
    return args


# -- choices -------------------------------------------------------------------------------------


def one_of(choices: type[StrEnum]) -> str:
    """``"chat, messages or native"``."""
    values = [str(c) for c in choices]
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"


def choice[E: StrEnum](choices: type[E], value: object, flag_name: str) -> E:
    """``value`` as a member of ``choices``, or the usage error ``--flag must be a, b or c``."""
    if isinstance(value, choices):
        return value
    try:
        return choices(str(value))
    except ValueError:
        raise UsageError(f"{flag_name} must be {one_of(choices)}") from None


def coerce_choices(obj: object) -> None:
    """Each choice field of a frozen options dataclass (not its groups) as its ``StrEnum``
    member: a caller may give the plain string. Call it from ``__post_init__``."""
    for f in fields(cast(Any, obj)):
        fl = flag_of(f)
        if fl is None or fl.choices is None:
            continue
        value = getattr(obj, f.name)
        if value is None or isinstance(value, fl.choices):
            continue
        object.__setattr__(obj, f.name, fl.value(value))


# -- token counts ------------------------------------------------------------------------------

_TOKEN_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}
_TOKEN_COUNT = re.compile(r"^\s*([0-9][0-9_]*(?:\.[0-9]*)?)\s*([kmg]i?)?\s*$", re.IGNORECASE)
TOKEN_COUNT_EXAMPLES = "e.g. 160000, 64K, 1.5M, 64Ki"


def parse_tokens(typed: object) -> int:
    """A token count as a user types it, for every flag that takes one: ``"64K"`` -> 64000,
    ``"1.5M"`` -> 1500000, ``"64Ki"`` -> 65536, ``"160_000"`` -> 160000 (an int is itself).
    Raises ``ValueError`` (a flag's :meth:`Flag.value` names the flag)."""
    if isinstance(typed, int) and not isinstance(typed, bool):
        if typed < 0:
            raise ValueError(f"{typed} is not a token count (negative)")
        return typed
    m = _TOKEN_COUNT.match(str(typed))
    if m is None:
        raise ValueError(f"{str(typed)!r} is not a token count ({TOKEN_COUNT_EXAMPLES})")
    value = float(m.group(1).replace("_", "")) * _TOKEN_SUFFIX[(m.group(2) or "").lower()]
    return round(value)


def parse_token_list(typed: object) -> tuple[int, ...]:
    """A comma list of token counts (``"16,64K, 1M"``), each as :func:`parse_tokens` reads it."""
    items = [t for t in str(typed).split(",") if t.strip()]
    if not items:
        raise ValueError(f"give at least one token count ({TOKEN_COUNT_EXAMPLES})")
    return tuple(parse_tokens(t) for t in items)
