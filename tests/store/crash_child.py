"""A writer to be killed: appends exchanges forever, printing each index once it is acknowledged.

Run as ``python crash_child.py TRACE``; the test reads the acknowledgements and sends SIGKILL.
"""

from __future__ import annotations

import sys

from agentx.apis import Api
from agentx.core.models import Exchange, Timing, Usage
from agentx.store import TraceWriter


def make_exchange(i: int) -> Exchange:
    """Exchange ``i`` of a growing conversation, deterministic, a few KB appended per turn."""
    messages = [{"role": "system", "content": "be brief"}]
    for j in range(i + 1):
        messages.append({"role": "user", "content": f"turn {j} " + "x" * (2000 + 37 * j)})
        if j < i:
            messages.append({"role": "assistant", "content": f"answer {j}"})
    return Exchange(
        request_id=f"r{i}",
        session_id="s",
        thread_id="main",
        api=Api.OPENAI_CHAT,
        request={"model": "m", "messages": messages, "stream": True},
        timing=Timing(start_wall_ns=1_700_000_000_000_000_000 + i),
        parent_request_id=f"r{i - 1}" if i else None,
        usage=Usage(prompt_tokens=100 + i, completion_tokens=i),
    )


def main(path: str) -> None:
    writer = TraceWriter(path, trace_id="crash")
    i = 0
    while True:
        writer.append(make_exchange(i))
        sys.stdout.write(f"{i}\n")
        sys.stdout.flush()
        i += 1


if __name__ == "__main__":
    main(sys.argv[1])
