"""A Weka fixture small enough for vLLM-CPU: a bundled real trace with every request's hash ids
decimated (every ``factor``-th block kept), so prefix sharing keeps its shape at 1/factor of the
size: two requests that shared ``k`` blocks share ``~k/factor``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentx.examples import example_path


def _shrink(r: dict[str, Any], factor: int, bs: int) -> dict[str, Any]:
    r = dict(r)
    if r.get("type") == "subagent":
        r["requests"] = [_shrink(x, factor, bs) for x in r.get("requests") or ()]
        for key in ("tool_tokens", "system_tokens", "total_tokens"):
            if isinstance(r.get(key), int):
                r[key] = r[key] // factor
        return r
    ids = list(r.get("hash_ids") or ())[::factor]
    r["hash_ids"] = ids
    r["in"] = len(ids) * bs + int(r.get("in", 0)) % bs
    return r


def small_weka(dst: Path, factor: int = 32, name: str = "trace_0010_head.json") -> Path:
    src = json.loads((example_path("weka") / name).read_text())
    bs = int(src["block_size"])
    src["requests"] = [_shrink(r, factor, bs) for r in src["requests"]]
    for key in ("tool_tokens", "system_tokens"):
        src[key] = int(src[key]) // factor
    out = dst / name.replace(".json", f"_div{factor}.json")
    out.write_text(json.dumps(src))
    return out
