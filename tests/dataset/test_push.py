"""``agentx dataset push``: the calls ``huggingface_hub`` gets (a recording stand-in for its
``HfApi``: the hub cannot be reached from the test machines), and no push of a directory that
does not verify."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from agentx.cli import app
from agentx.core.errors import AgentxError, UsageError
from agentx.dataset.options import PushOptions
from agentx.dataset.push import IGNORE, push


class RecordingApi:
    calls: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def __init__(self, **kw: Any) -> None:
        self.calls.append(("HfApi", kw))

    def create_repo(self, repo_id: str, **kw: Any) -> str:
        self.calls.append(("create_repo", {"repo_id": repo_id, **kw}))
        return f"https://huggingface.co/datasets/{repo_id}"

    def upload_large_folder(self, **kw: Any) -> None:
        self.calls.append(("upload_large_folder", kw))

    def dataset_info(self, repo_id: str) -> Any:
        return SimpleNamespace(sha="b" * 40)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> type[RecordingApi]:
    module = pytest.importorskip("huggingface_hub")
    RecordingApi.calls = []
    monkeypatch.setattr(module, "HfApi", RecordingApi)
    return RecordingApi


def test_push_creates_a_dataset_repo_and_uploads_the_folder(
    packed: Path, hub: type[RecordingApi]
) -> None:
    pushed = push(packed, PushOptions(repo="org/name", private=True))
    assert pushed.pinned == "hf://datasets/org/name@" + "b" * 40
    (_, made), (_, created), (_, uploaded) = hub.calls
    assert made == {}  # no token handed over: the client finds HF_TOKEN or the cached login
    assert created == {
        "repo_id": "org/name",
        "repo_type": "dataset",
        "private": True,
        "exist_ok": True,
    }
    assert uploaded == {
        "repo_id": "org/name",
        "folder_path": str(packed),
        "repo_type": "dataset",
        "ignore_patterns": IGNORE,
    }


def test_a_directory_that_does_not_verify_is_not_pushed(
    packed: Path, tmp_path: Path, hub: type[RecordingApi]
) -> None:
    copy = Path(shutil.copytree(packed, tmp_path / "copy"))
    (copy / "traces.jsonl").write_text("{}\n")
    with pytest.raises(AgentxError, match=r"does not verify, nothing pushed: traces\.jsonl"):
        push(copy, PushOptions(repo="org/name"))
    assert hub.calls == []


def test_the_command_takes_repo_and_private(packed: Path, hub: type[RecordingApi]) -> None:
    result = CliRunner().invoke(app, ["dataset", "push", str(packed), "--repo", "org/name"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "hf://datasets/org/name@" + "b" * 40
    assert hub.calls[1][1]["private"] is False
    with pytest.raises(UsageError, match="ORG/NAME"):
        PushOptions(repo="name-only")
