"""``agentx dataset push DIR --repo ORG/NAME [--private]``: a verified packed directory to the
Hugging Face hub, through ``huggingface_hub`` (the optional dependency ``agentx-replay[hf]``):
``create_repo(repo_type="dataset", exist_ok=True)``, then ``upload_large_folder`` (resumable,
in parallel). The token is the hub client's own: ``HF_TOKEN`` or the cached ``hf auth login``;
agentx never reads, passes or writes it. ``HF_ENDPOINT`` points the client at another hub.

Nothing is uploaded unless the directory verifies (:func:`agentx.dataset.verify.verify_dir`):
what the receiver checks is what was sent. The commit the upload made is the revision to pin.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentx.core.errors import AgentxError, UsageError
from agentx.dataset.options import PushOptions
from agentx.dataset.verify import verify_dir

# what the upload leaves out: hidden files (a resumable upload's own .cache/ included)
IGNORE = [".*", "**/.*", ".cache/**"]


@dataclass(frozen=True, slots=True)
class Pushed:
    repo: str
    url: str
    revision: str | None  # the commit to pin (None when the hub did not say)

    @property
    def pinned(self) -> str:
        rev = f"@{self.revision}" if self.revision else ""
        return f"hf://datasets/{self.repo}{rev}"


class PushError(AgentxError):
    """The hub refused or could not be reached (one line: the client's error type and text)."""


def _hub() -> Any:
    try:
        import huggingface_hub
    except ImportError:
        raise UsageError(
            "agentx dataset push needs huggingface_hub: pip install 'agentx-replay[hf]'"
        ) from None
    return huggingface_hub


def push(directory: str | os.PathLike[str], options: PushOptions) -> Pushed:
    """Verify ``directory``, create the dataset repository if need be, upload every file."""
    root = Path(directory)
    report = verify_dir(root)
    if not report.ok:
        raise AgentxError(
            f"{root} does not verify, nothing pushed: " + "; ".join(report.differences[:5])
        )
    hub = _hub()
    api = hub.HfApi()
    try:
        url = api.create_repo(
            options.repo, repo_type="dataset", private=options.private, exist_ok=True
        )
        api.upload_large_folder(
            repo_id=options.repo,
            folder_path=os.fspath(root),
            repo_type="dataset",
            ignore_patterns=IGNORE,
        )
        info = api.dataset_info(options.repo)
    except Exception as exc:  # the hub's errors vary by version: every failure is one line
        first = (str(exc).strip().splitlines() or [""])[0]
        raise PushError(
            f"cannot push to {options.repo} ({type(exc).__name__}: {first[:200]})"
        ) from None
    return Pushed(options.repo, str(url), getattr(info, "sha", None))
