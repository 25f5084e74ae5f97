"""Commands whose options are declared on options dataclasses (:mod:`agentx.core.options`).

``@declared(ReplayOptions, CostInputs)`` gives a command one typer option per declared flag of
those classes (and of the groups they embed), in the help panel the flag names, and hands the
command what the user gave as a :class:`Given`: ``given.build(CostInputs)``, or the flat values
of a class (``given.values(ReplayOptions)``) for a constructor that fills in presets. A flag
counts as given when it came from the command line, the environment or a ``--config`` file; one
not given is absent, so the dataclass's default (or a preset) applies.

An option the command declares itself (``-o`` of ``sweep``) hides a declared flag of the same
name; :class:`Only` takes some panels of a class (``sweep`` takes replay's, less the scenario's).

A flag's hidden old spellings (``Flag.hidden``) are options of their own, not shown, that fill
the same field when its shown name is not given; this holds for a command's own options made
with :func:`typer_option` too, so ``@declared_command()`` without classes gives a command
those spellings.
"""

from __future__ import annotations

import functools
import inspect
import sys
import typing
import weakref
from collections.abc import Callable, Collection, Mapping
from dataclasses import MISSING, dataclass, replace
from typing import Annotated, Any, TypeVar, cast

import typer
from rich.markup import escape

from agentx.core.options import Declared, Flag, Panel, build, declared

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., None])
GIVEN = "given"  # the command's parameter that receives what was given
CTX = "_declared_ctx"  # the context, when the command takes none itself
PANEL_ORDER = {p.value: i for i, p in enumerate(Panel)}


def _given(ctx: typer.Context, param: str) -> bool:
    """Whether ``param`` came from the command line, the environment or a ``--config`` file
    (``default_map``), not from its default."""
    source = ctx.get_parameter_source(param)
    return source is not None and source.name != "DEFAULT"


@dataclass(frozen=True, slots=True)
class Only:
    """The flags of ``cls`` in these panels only."""

    cls: type
    panels: frozenset[Panel]

    @classmethod
    def without(cls, options: type, *panels: Panel) -> Only:
        return cls(options, frozenset(Panel) - set(panels))


class Given:
    """What the user gave for a command's declared options, by the class that declares them.
    Typed text becomes values here (``--start-ratio 0.25:0.75`` -> ``(0.25, 0.75)``), so a bad
    one raises its :class:`~agentx.core.errors.UsageError` in the command, as its other errors."""

    def __init__(self, typed: dict[type, dict[str, tuple[Flag, Any]]]) -> None:
        self._typed = typed

    def values(self, cls: type) -> dict[str, Any]:
        """The flat values given for ``cls`` (and the groups it embeds)."""
        return {name: flag.value(typed) for name, (flag, typed) in self._typed[cls].items()}

    def build(self, cls: type[T], **more: Any) -> T:
        """``cls`` from what was given, and ``more`` values the command adds."""
        return build(cls, {**self.values(cls), **more})


@dataclass(frozen=True, slots=True)
class _Spec:
    root: type
    declared: Declared
    aliases: tuple[str, ...]  # the parameters of its hidden spellings
    required: bool  # required, with hidden spellings: checked here, not by click


@dataclass(frozen=True, slots=True)
class _OwnAliases:
    """A command's own option (``name``) and the parameters of its hidden spellings."""

    name: str
    aliases: tuple[str, ...]
    required: bool


# the flag each typer_option() was made from: a command's own option keeps its hidden spellings
_FLAG_OF: weakref.WeakKeyDictionary[typer.models.OptionInfo, Flag] = weakref.WeakKeyDictionary()


def typer_option(flag: Flag, **extra: Any) -> Any:
    """The ``typer.Option`` of a declared flag (its visible names). A command that declares it
    as its own option gets its hidden spellings too, under :func:`declared_command`."""
    info = typer.Option(
        *flag.names,
        help=escape(flag.help),
        rich_help_panel=flag.panel.value,
        metavar=flag.metavar,
        min=flag.min,
        max=flag.max,
        envvar=flag.envvar,
        show_envvar=flag.envvar is not None,
        show_default=flag.show_default and not flag.invert,
        **extra,
    )
    _FLAG_OF[info] = flag
    return info


def _cli_type(d: Declared) -> tuple[Any, Any]:
    """(what typer parses, its default) of a declared flag."""
    fl = d.flag
    if fl.invert:
        return bool, not d.default
    if fl.choices is not None:  # shown as its default's value
        return (str, str(d.default)) if d.default is not None else (str | None, None)
    if fl.parse is not None:  # typed as text; not given: the field's default
        if d.default is MISSING:  # required: its absence is a usage error, not a default
            return (list[str] if fl.multiple else str), MISSING
        if fl.multiple:
            return list[str] | None, None
        if _is_number(d.default):  # shown as the user would type it: --kv-tokens 163840
            return str, str(d.default)
        return str | None, None  # its help says the default
    hints = typing.get_type_hints(d.owner)
    return hints[d.name], d.default


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _hidden_option(name: str, help: str, kind: Any) -> Any:
    """A hidden spelling: an option of its own, shown nowhere, ``None`` when not given."""
    return Annotated[kind | None, typer.Option(name, hidden=True, help=escape(help))]


def _missing(ctx: typer.Context, name: str) -> Exception:
    """The error typer gives a required option that none of its spellings gave (exit 2),
    from the click typer runs on (its own copy, in recent releases)."""
    param = next(p for p in ctx.command.params if p.name == name)
    errors = sys.modules[typer.BadParameter.__module__]
    return cast(Exception, errors.MissingParameter(ctx=ctx, param=param))


def _long_names(flag: Flag) -> set[str]:
    return {part for n in flag.names for part in n.split("/") if part.startswith("-")}


def declared_command(
    *roots: type | Only, notes: Mapping[str, str] | None = None
) -> Callable[[F], F]:
    """The decorator (see the module): under ``@app.command()``, above the command. ``notes``:
    words added to a flag's help, by its flat name (``serve-sim``'s profile defaults)."""

    def decorate(func: F) -> F:
        own = inspect.signature(func)
        takes_given = GIVEN in own.parameters
        hints = typing.get_type_hints(func, include_extras=True)
        own_params = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in own.parameters.values()
            if p.name != GIVEN
        ]
        taken = {
            part
            for p in own_params
            for info in typing.get_args(p.annotation)[1:]
            if isinstance(info, typer.models.OptionInfo)
            for name in (info.default, *(info.param_decls or ()), *_hidden_of(info))
            if isinstance(name, str)
            for part in name.split("/")
        }
        specs: list[_Spec] = []
        params: list[inspect.Parameter] = []
        own_aliases: list[_OwnAliases] = []
        for i, p in enumerate(own_params):
            own_params[i], more, aliased = _own_aliases(p)
            params += more
            if aliased is not None:
                own_aliases.append(aliased)
        seen: dict[str, type] = {}
        for root in roots:
            cls, panels = (root.cls, root.panels) if isinstance(root, Only) else (root, None)
            for d in declared(cls):
                if panels is not None and d.flag.panel not in panels:
                    continue
                if _long_names(d.flag) & taken or d.name in own.parameters:
                    continue  # the command declares this option itself
                if d.name in seen:
                    raise TypeError(f"{func.__name__}: {d.name!r} in {seen[d.name]} and {cls}")
                seen[d.name] = cls
                kind, default = _cli_type(d)
                required = default is MISSING
                note = (notes or {}).get(d.name)
                flag = d.flag if note is None else replace(d.flag, help=f"{d.flag.help} ({note})")
                # its range is checked by the flag itself (Given), in one line like its other
                # errors, not by typer's usage box
                option = typer_option(replace(flag, min=None, max=None))
                # a required flag with other spellings is checked here: any of them will do
                checked = required and bool(d.flag.hidden)
                params.append(
                    inspect.Parameter(
                        d.name,
                        inspect.Parameter.KEYWORD_ONLY,
                        default=None
                        if checked
                        else (inspect.Parameter.empty if required else default),
                        annotation=Annotated[kind | None if checked else kind, option],
                    )
                )
                aliases = []
                for i, name in enumerate(d.flag.hidden):
                    alias = f"{d.name}__{i}"
                    params.append(
                        inspect.Parameter(
                            alias,
                            inspect.Parameter.KEYWORD_ONLY,
                            default=None,
                            annotation=_hidden_option(name, d.flag.help, kind),
                        )
                    )
                    aliases.append(alias)
                specs.append(_Spec(cls, d, tuple(aliases), checked))

        ctx_param = next((p.name for p in own_params if p.annotation is typer.Context), None)
        if ctx_param is None:
            params.append(
                inspect.Parameter(CTX, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)
            )
        signature = own.replace(parameters=_ordered([*own_params, *params]))

        @functools.wraps(func)
        def command(**kwargs: Any) -> None:
            ctx: typer.Context = kwargs[ctx_param] if ctx_param else kwargs.pop(CTX)
            given: dict[type, dict[str, tuple[Flag, Any]]] = {
                (r.cls if isinstance(r, Only) else r): {} for r in roots
            }
            for spec in specs:
                name = spec.declared.name
                typed, is_given = _spelt(ctx, kwargs, name, spec.aliases)
                if spec.required and not is_given:
                    raise _missing(ctx, name)
                if is_given:
                    given[spec.root][name] = (spec.declared.flag, typed)
            for own_alias in own_aliases:
                name = own_alias.name
                kwargs[name], is_given = _spelt(ctx, kwargs, name, own_alias.aliases)
                if own_alias.required and not is_given:
                    raise _missing(ctx, name)
            func(**kwargs, **({GIVEN: Given(given)} if takes_given else {}))

        command.__signature__ = signature  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
        return cast(F, command)

    return decorate


def _hidden_of(info: typer.models.OptionInfo) -> tuple[str, ...]:
    flag = _FLAG_OF.get(info)
    return () if flag is None else flag.hidden


def _own_aliases(
    p: inspect.Parameter,
) -> tuple[inspect.Parameter, list[inspect.Parameter], _OwnAliases | None]:
    """A command's own option made with :func:`typer_option`: itself (not required by click
    when it has other spellings: checked by the command), and its hidden spellings."""
    args = typing.get_args(p.annotation)
    info = next((a for a in args[1:] if isinstance(a, typer.models.OptionInfo)), None)
    hidden = () if info is None else _hidden_of(info)
    if info is None or not hidden:
        return p, [], None
    flag = _FLAG_OF[info]
    kind = args[0]
    required = p.default is inspect.Parameter.empty
    if required:
        p = p.replace(default=None, annotation=Annotated[kind | None, info])
    aliases = [
        inspect.Parameter(
            f"{p.name}__{i}",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=_hidden_option(name, flag.help, kind),
        )
        for i, name in enumerate(hidden)
    ]
    return p, aliases, _OwnAliases(p.name, tuple(a.name for a in aliases), required)


def _spelt(
    ctx: typer.Context, kwargs: dict[str, Any], name: str, aliases: tuple[str, ...]
) -> tuple[Any, bool]:
    """(what was typed, whether it was given) under ``name`` or, when it was not, under one of
    its hidden spellings; the spellings' parameters are taken out of ``kwargs``."""
    typed, is_given = kwargs.pop(name), _given(ctx, name)
    for alias in aliases:
        value = kwargs.pop(alias)
        if not is_given and _given(ctx, alias):
            typed, is_given = value, True
    return typed, is_given


def _ordered(params: Collection[inspect.Parameter]) -> list[inspect.Parameter]:
    """The context and the arguments first (in their order), then options by help panel."""

    def panel_of(p: inspect.Parameter) -> int:
        for info in typing.get_args(p.annotation)[1:]:
            if isinstance(info, typer.models.ArgumentInfo):
                return -1
            if isinstance(info, typer.models.OptionInfo):
                return PANEL_ORDER.get(info.rich_help_panel or "", len(PANEL_ORDER))
        return -2  # typer.Context

    ordered = sorted(params, key=panel_of)
    return [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in ordered]
