"""Weka JSON (SemiAnalysis AgentX, kv-cache-tester ``traces/``): import (:mod:`.read`; the
checks of its values, :mod:`.checks`), the record mapping both ways (:mod:`.record`), export
(:mod:`.write`)."""

from agentx.formats.weka.checks import LOCAL_SCOPE_STRIDE
from agentx.formats.weka.read import (
    SUBAGENT,
    WekaTrace,
    iter_weka,
    parse_weka,
    read_nth_file,
    read_weka_file,
    weka_files,
)
from agentx.formats.weka.write import WEKA_BLOCK_SIZE, weka_document, write_weka, write_weka_jsonl

__all__ = [
    "LOCAL_SCOPE_STRIDE",
    "SUBAGENT",
    "WEKA_BLOCK_SIZE",
    "WekaTrace",
    "iter_weka",
    "parse_weka",
    "read_nth_file",
    "read_weka_file",
    "weka_document",
    "weka_files",
    "write_weka",
    "write_weka_jsonl",
]
