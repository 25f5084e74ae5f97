"""agentx-harness's own reading of Weka traces: how it splits their flat parallel agents.

Runs in the harness's venv (scripts/harness_venv.sh), never in agentx's: it calls the harness's
loader code itself (``WekaTraceLoader._detect_and_split_flat_chains`` with its default
settings, as ``agentx profile --custom-dataset-type weka_trace`` runs it), so what it prints is
the harness's reading, not a copy of its rules:

    .venv-harness/bin/python scripts/harness_reading.py TRACE.json|DIR ... > HARNESS_READING

Prints one JSON object: per file name, ``counts`` (the figures the harness logs: traces split,
chains, aux sidecars, reductions, worker-group members, seams merged, empty-hash requests kept
on main) and ``chains``: for each top-level request of the file, in file order, ``[chain,
turn]``, ``chain`` being ``main`` or the suffix of the harness's conversation id (``fa:000``,
``aux:001``, ``wg:000_001``). The tests compare agentx's split with such a recording
(tests/formats/data/weka-flat).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def reading(path: Path) -> dict[str, Any]:
    from aiperf.dataset.loader.weka_trace import WekaTraceLoader, _SplitStats
    from aiperf.dataset.loader.weka_trace_models import (
        WekaNormalRequest,
        WekaStreamingRequest,
        WekaTrace,
    )

    trace = WekaTrace.model_validate(json.loads(path.read_bytes()))
    normals = [
        (i, r)
        for i, r in enumerate(trace.requests)
        if isinstance(r, WekaNormalRequest | WekaStreamingRequest)
    ]
    plans: list[Any] = []
    stats = _SplitStats()
    main = normals
    if len(normals) > 1:
        main = WekaTraceLoader._detect_and_split_flat_chains(
            None,  # the method reads nothing of its loader
            trace_id=trace.id,
            normals=normals,
            trace=trace,
            trace_bs=trace.block_size,
            flat_plans=plans,
            split_stats=stats,
        )
    where: dict[int, tuple[str, int]] = {oi: ("main", k) for k, (oi, _) in enumerate(main)}
    for plan in plans:
        name = plan.session_id.split("::", 1)[1]
        where.update({oi: (name, k) for k, (oi, _) in enumerate(plan.requests)})
    counts = {
        "traces_split": stats.traces_split,
        "chains": stats.total_chains,
        "aux": stats.total_aux,
        "reductions": stats.total_reduction,
        "worker_group": stats.total_worker_group,
        "seams": stats.total_seams,
        "empty_hash": stats.total_empty_hash,
    }
    return {"counts": counts, "chains": [list(where[oi]) for oi, _ in normals]}


def main(argv: list[str]) -> int:
    files: list[Path] = []
    for arg in argv:
        p = Path(arg)
        files.extend(sorted(p.glob("*.json")) if p.is_dir() else [p])
    out = {f.name: reading(f) for f in files}
    json.dump(out, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
