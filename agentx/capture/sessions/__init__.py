"""Sessions and threads: which agent session a captured request belongs to, and which
conversation.

:mod:`.placement` holds the rules and :class:`Sessions`, which places each request;
:mod:`.ids` the ids (new ones, and the session id an agent itself sent); :mod:`.conversation`
what is compared of a conversation (prefix hashes, tools offered, texts, repeated answers).
"""

from __future__ import annotations

from agentx.capture.sessions.ids import new_id, session_hint
from agentx.capture.sessions.placement import Placement, Sessions

__all__ = ["Placement", "Sessions", "new_id", "session_hint"]
