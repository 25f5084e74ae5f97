"""The three shapes of ``with`` in agentx, written once.

- :class:`Closing`: a thing that holds something open (a progress display) closes at the end.
- :class:`Committing`: a writer commits what it wrote (renames it into place) only when the block
  succeeded, and removes it otherwise, so a failed producer never replaces the user's file with
  what it got to.
- :class:`Running`: a server or process started for the block is stopped after it, however the
  block ended.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class Closing(ABC):
    __slots__ = ()

    @abstractmethod
    def close(self) -> object:
        """Release what is held (idempotent)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Committing(ABC):
    __slots__ = ()

    @abstractmethod
    def close(self) -> object:
        """Write what is pending and move the output into place."""

    @abstractmethod
    def abort(self) -> None:
        """Remove what was written; the file that was there before stays as it was."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class Running(ABC):
    __slots__ = ()

    @abstractmethod
    def start(self) -> Self:
        """Start and wait until ready."""

    @abstractmethod
    def stop(self) -> None:
        """Stop and wait until gone (idempotent)."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
