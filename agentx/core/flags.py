"""Trace flags: the one vocabulary of ``Exchange.flags`` (docs/trace-format.md, "Flags").

Every stage that sets or reads a flag imports its name from here. A flag is a plain string in
the trace's ``flags`` list; ``weka.*`` flags carry a value (``weka.type=n``) and keep what an
imported Weka trace said that has no column of its own.

A flag that was renamed keeps its old spelling in :data:`ALIASES`: traces written before the
rename still carry it, so readers test with :func:`has`, which knows both spellings.
"""

from __future__ import annotations

from collections.abc import Iterable

# -- set by capture: what happened on the wire ---------------------------------------------------
FLAG_PARTIAL = "partial"  # the response broke off after its headers (aborted or cut stream)
FLAG_NO_RESPONSE = "no_response"  # the connection failed before any response
FLAG_HTTP_ERROR = "http_error"  # status >= 400
FLAG_NON_MODEL = "non_model"  # not a model call: count_tokens, model lists, telemetry
FLAG_UNPARSED_BODY = "unparsed_body"  # the request body could not be decoded or parsed
FLAG_PREVIOUS_RESOLVED = "previous_response_resolved"  # Responses chain rebuilt into the input
FLAG_PREVIOUS_UNRESOLVED = "previous_response_unresolved"  # its previous_response_id was unknown
FLAG_SECRET_REDACTED = "secret_redacted"  # a secret was replaced in this row (capture or scrub)
# prompt_tokens/completion_tokens were counted by agentx's tokenizer (cl100k_base, the rendering
# of agentx.prefixcache.tokens): the provider reported no usage (a stream without include_usage)
FLAG_USAGE_ESTIMATED = "usage_estimated"

# -- set by capture's session tracking (and by importers): what kind of thread ----------------
FLAG_SIDE_CALL = "side_call"  # utility call: title/topic generation, quota probe
FLAG_SUBAGENT = "subagent"  # a thread spawned by the main agent
FLAG_COMPACTION = "compaction"  # the agent restarted the conversation from a summary
FLAG_RETRY = "retry"  # the same request sent again
FLAG_FORK = "fork"  # a new branch off an earlier point of the same conversation
THREAD_FLAGS = frozenset({FLAG_SIDE_CALL, FLAG_SUBAGENT, FLAG_COMPACTION, FLAG_RETRY, FLAG_FORK})
# The agent rewrote the end of its parent's conversation before continuing it (aider moves its
# file listing after the history and its reminder to the newest user message): the child
# repeats its parent's answer but only a prefix of its parent's prompt. With it, a valued flag
# ``replaced_chars=<n>``: how many characters at the end of the parent's rendered conversation
# (agentx.prefixcache.tokens.render_message) are not a prefix of the child's.
FLAG_HISTORY_REWRITTEN = "history_rewritten"
REPLACED_CHARS = "replaced_chars"

# -- set by scrub -------------------------------------------------------------------------------
FLAG_PROVIDER_FIELDS = "provider_fields"  # provider-only fields kept: replay strips them
FLAG_REPAIRED = "repaired"  # orphaned tool calls/results were removed

# -- set by importers ---------------------------------------------------------------------------
WEKA_PREFIX = "weka."  # weka.type=<n|s>, weka.in=..., weka.out=..., weka.agent_id=..., ...
# The Weka importer's split of flat parallel agents (agentx.formats.weka.flat), as weka.<key>=
# flags: every row of a chain recorded among the main agent's requests says what it is
# (weka.chain=agent|sidecar|reduction|worker); the first row of a split trace's main thread
# counts the seams spliced and the rows without block ids kept on it (when not 0).
WEKA_CHAIN = "chain"
WEKA_SEAMS = "seams"
WEKA_EMPTY_HASH = "empty_hash"

# -- groups read by more than one stage ---------------------------------------------------------
# The row's response is incomplete. "aborted", "truncated" and "incomplete" are set by no agentx
# stage; scrub has always treated them as partial, so traces from other tools that use them
# are cleaned the same.
INCOMPLETE_FLAGS = frozenset({FLAG_PARTIAL, "aborted", "truncated", "incomplete"})
# A body could not be parsed. Only "unparsed_body" is set by agentx; the others are honoured
# for the same reason as above.
UNPARSEABLE_FLAGS = frozenset(
    {FLAG_UNPARSED_BODY, "unparseable", "bad_json", "bad_request_body", "bad_response_body"}
)

# Old spelling -> current name. scrub wrote "redacted" for what capture called
# "secret_redacted"; both meant "a secret in this row was replaced".
ALIASES: dict[str, str] = {"redacted": FLAG_SECRET_REDACTED}
_SPELLINGS: dict[str, frozenset[str]] = {
    name: frozenset({name, *(old for old, new in ALIASES.items() if new == name)})
    for name in set(ALIASES.values())
}


def has(flags: Iterable[str], name: str) -> bool:
    """Whether ``flags`` holds ``name`` under its current or any former spelling."""
    spellings = _SPELLINGS.get(name)
    if spellings is None:
        return name in flags
    return not spellings.isdisjoint(flags)


def weka_values(flags: Iterable[str], key: str) -> list[str]:
    """The values of ``weka.<key>=<value>`` flags, in order."""
    prefix = f"{WEKA_PREFIX}{key}="
    return [f[len(prefix) :] for f in flags if f.startswith(prefix)]


def replaced_chars_flag(n: int) -> str:
    return f"{REPLACED_CHARS}={n}"


def replaced_chars(flags: Iterable[str]) -> int | None:
    """The ``replaced_chars=<n>`` value of a ``history_rewritten`` row, else ``None``."""
    prefix = f"{REPLACED_CHARS}="
    for f in flags:
        if f.startswith(prefix) and f[len(prefix) :].isdigit():
            return int(f[len(prefix) :])
    return None


def weka_flag(key: str, value: object) -> str:
    return f"{WEKA_PREFIX}{key}={value}"
