"""``--session-header``: what each preset sends, and what serve-sim's router reads back."""

from __future__ import annotations

import pytest

from agentx.routing import SessionPreset, session_header
from agentx.routing.headers import replica_token, routing_key, token_replica


def test_presets_name_the_tree_on_every_request() -> None:
    vllm = session_header("vllm-router")
    assert vllm is not None and vllm.preset is SessionPreset.VLLM_ROUTER
    assert vllm.headers("t1") == vllm.headers("t1", "sub") == {"x-session-id": "t1"}
    smg = session_header("SMG")
    assert smg is not None and smg.headers("t1", "sub") == {"x-smg-routing-key": "t1"}
    custom = session_header("X-My-Affinity")
    assert custom is not None and custom.preset is None
    assert custom.headers("t1") == {"x-my-affinity": "t1"}
    assert str(custom) == "x-my-affinity" and str(vllm) == "vllm-router"


def test_dynamo_names_a_subagent_chain_and_its_parent() -> None:
    d = session_header("dynamo")
    assert d is not None
    assert d.headers("t1") == {"x-dynamo-session-id": "t1"}
    assert d.headers("t1", "sub-2") == {
        "x-dynamo-session-id": "t1:sub-2",
        "x-dynamo-parent-session-id": "t1",
    }
    # the router keeps a subagent with its parent's tree
    assert routing_key(d.headers("t1", "sub-2")) == "t1" == routing_key(d.headers("t1"))


def test_llm_d_echoes_the_token_the_server_answered() -> None:
    h = session_header("llm-d")
    assert h is not None and h.echo
    assert h.headers("t1") == {}
    token = replica_token(3)
    assert h.headers("t1", token=token) == {"x-session-token": token}
    assert token_replica(token, 4) == 3
    assert token_replica(token, 3) is None
    assert token_replica("not-base64!", 4) is None


def test_bad_header_names_are_refused() -> None:
    with pytest.raises(ValueError, match="neither a preset"):
        session_header("bad header")
    assert session_header(None) is None


def test_routing_key_reads_every_preset() -> None:
    for preset in ("vllm-router", "smg", "dynamo"):
        h = session_header(preset)
        assert h is not None and routing_key(h.headers("tree-9")) == "tree-9"
    assert routing_key({}) == ""
