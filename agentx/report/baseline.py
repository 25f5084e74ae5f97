"""Baselines: a run checked against an earlier run of the same configuration.

``--baseline PATH`` names a results directory, or a directory of saved baselines (``agentx
baseline save RUN NAME`` copies a run there as ``NAME/``), of which the newest compatible one is
chosen. Two runs are compatible when they replayed the same trace (``trace_fingerprint``)
against the same kind of server, with the same ``--concurrency`` and ``--scenario``; a
baseline of another configuration is refused, saying what differs. The rules and the noise
model are :mod:`agentx.metrics.regression`'s; the result is ``agentx.baseline/1``
(:mod:`agentx.results.baseline`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from agentx.core.errors import AgentxError, UsageError
from agentx.core.outputs import BASELINE_FILE, REQUESTS_FILE, SUMMARY_FILE, write_atomic
from agentx.core.record import RequestRecord
from agentx.formats.fingerprint import short
from agentx.metrics.regression import check_all, parse_fail_on
from agentx.report.check_options import CheckInputs
from agentx.report.ci import publish
from agentx.report.results_dir import load_results, load_summary
from agentx.results.baseline import BaselineCheck, RunIdentity
from agentx.results.summary import Summary


def identity(summary: Summary, results_dir: Path | None) -> RunIdentity:
    c = summary.config
    concurrency, scenario = c.get("concurrency"), c.get("scenario")
    kind = summary.server_identity.kind if summary.server_identity else c.get("server_kind")
    return RunIdentity(
        None if results_dir is None else str(results_dir),
        summary.started_at,
        summary.trace_fingerprint,
        kind if isinstance(kind, str) else None,
        concurrency if isinstance(concurrency, int) else None,
        scenario if isinstance(scenario, str) else None,
        summary.labels,
    )


def differences(base: RunIdentity, new: RunIdentity) -> list[str]:
    """What keeps ``base`` from being ``new``'s baseline (a fingerprint one run lacks is no
    difference: :func:`unknown_fingerprint` warns of it)."""
    out = []
    b_fp, n_fp = base.trace_fingerprint, new.trace_fingerprint
    if b_fp and n_fp and b_fp != n_fp:
        out.append(f"trace {short(base.trace_fingerprint)} vs {short(new.trace_fingerprint)}")
    for what, b, n in (
        ("server kind", base.server_kind, new.server_kind),
        ("concurrency", base.concurrency, new.concurrency),
        ("scenario", base.scenario, new.scenario),
    ):
        if b != n:
            out.append(f"{what} {b} vs {n}")
    return out


def unknown_fingerprint(base: RunIdentity, new: RunIdentity) -> list[str]:
    missing = [side for side, r in (("base", base), ("new", new)) if not r.trace_fingerprint]
    if not missing:
        return []
    return [
        f"the {' and '.join(missing)} run records no trace fingerprint: "
        "whether both replayed the same trace is unknown"
    ]


def fingerprint_warnings(base: Summary, new: Summary) -> list[str]:
    """What ``report --compare`` says of two runs of different traces (or of unknown ones)."""
    b, n = identity(base, None), identity(new, None)
    if b.trace_fingerprint and n.trace_fingerprint and b.trace_fingerprint != n.trace_fingerprint:
        return [
            f"the runs replayed different traces (fingerprints {short(b.trace_fingerprint)} vs "
            f"{short(n.trace_fingerprint)}): their figures are not comparable"
        ]
    return unknown_fingerprint(b, n) if b.trace_fingerprint or n.trace_fingerprint else []


def _candidates(path: Path) -> list[Path]:
    """``path`` itself when it is a results directory, else the saved baselines it holds."""
    if (path / SUMMARY_FILE).is_file():
        return [path]
    if not path.is_dir():
        raise UsageError(f"--baseline {path}: no such directory")
    found = sorted(d for d in path.iterdir() if (d / SUMMARY_FILE).is_file())
    if not found:
        raise UsageError(
            f"--baseline {path}: neither a results directory nor a directory of baselines "
            "(agentx baseline save RUN NAME --dir DIR)"
        )
    return found


def choose_baseline(path: Path, new: RunIdentity) -> tuple[Path, Summary]:
    """The baseline ``path`` names for the run ``new``: the newest compatible one."""
    refused: list[str] = []
    fitting: list[tuple[str, Path, Summary]] = []
    for d in _candidates(path):
        summary = load_summary(d)
        why = differences(identity(summary, d), new)
        if why:
            refused.append(f"{d.name}: " + ", ".join(why))
        else:
            fitting.append((summary.started_at or "", d, summary))
    if not fitting:
        raise UsageError(
            f"--baseline {path}: no baseline of this run's configuration ("
            + "; ".join(refused)
            + "): record one of this configuration (agentx baseline save)"
        )
    _, chosen, summary = max(fitting, key=lambda t: (t[0], t[1].name))
    return chosen, summary


def check_baseline(
    new: Summary,
    new_records: list[RequestRecord],
    new_dir: Path | None,
    inputs: CheckInputs,
) -> BaselineCheck:
    """``new`` (with its rows) against the baseline ``inputs`` names."""
    assert inputs.baseline is not None
    rules = parse_fail_on(inputs.spec)
    new_id = identity(new, new_dir)
    chosen, _ = choose_baseline(inputs.baseline, new_id)
    base, base_records = load_results(chosen)
    if not base_records or not new_records:
        which = chosen if not base_records else new_dir
        raise AgentxError(f"{which}: --baseline needs requests.parquet beside summary.json")
    base_id = identity(base, chosen)
    warnings = unknown_fingerprint(base_id, new_id)
    if base_id.labels != new_id.labels:
        warnings.append(
            f"the runs carry different labels ({_labels(base_id)} vs {_labels(new_id)})"
        )
    checks = check_all(rules, base_records, new_records, inputs.bootstrap, strict=inputs.strict)
    return BaselineCheck(
        base_id, new_id, inputs.spec, inputs.strict, inputs.bootstrap, checks, tuple(warnings)
    )


def _labels(r: RunIdentity) -> str:
    return ",".join(f"{k}={v}" for k, v in r.labels) or "none"


def save_baseline(run: Path, name: str, store: Path, *, force: bool = False) -> Path:
    """Copy the results directory ``run`` into ``store/name``: its summary and rows (what a
    check reads), its report page and the rest."""
    load_summary(run)  # a results directory, or refused saying what it is
    if not (run / REQUESTS_FILE).is_file():
        raise AgentxError(f"{run}: a baseline needs requests.parquet beside summary.json")
    if not name or name.startswith(".") or "/" in name or "\\" in name:
        raise UsageError(f"{name!r} is not a baseline name (one path component)")
    target = store / name
    if target.exists():
        if not force:
            raise UsageError(f"{target} exists: pass --force to replace it")
        shutil.rmtree(target)
    store.mkdir(parents=True, exist_ok=True)
    tmp = store / f".{name}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(run, tmp)
    tmp.rename(target)  # never a half-copied baseline where a check looks
    return target


def list_baselines(store: Path) -> list[tuple[str, Summary]]:
    """The baselines of ``store``, oldest first."""
    found = [(d.name, load_summary(d)) for d in _candidates(store)]
    return sorted(found, key=lambda t: (t[1].started_at or "", t[0]))


def check_run(
    summary: Summary,
    records: list[RequestRecord],
    out_dir: Path,
    inputs: CheckInputs,
    *,
    name: str,
    failed: bool = False,
) -> tuple[BaselineCheck | None, list[Path]]:
    """What ``agentx replay`` does after a run: the baseline check (unless the run itself
    ``failed``: its figures say nothing of the server), written as ``out_dir/baseline.json``,
    then ``--junit`` and the step summary."""
    check = None
    written: list[Path] = []
    if inputs.baseline is not None and not failed:
        check = check_baseline(summary, records, out_dir, inputs)
        target = out_dir / BASELINE_FILE
        write_atomic(target, orjson.dumps(check.to_json(), option=orjson.OPT_INDENT_2), force=True)
        written.append(target)
    written += publish(summary, check, inputs.junit, name=name)
    return check, written
