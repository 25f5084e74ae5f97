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


class _Scoped(ABC):
    __slots__ = ()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._leave(succeeded=exc_type is None)

    @abstractmethod
    def _leave(self, *, succeeded: bool) -> None: ...


class Closing(_Scoped):
    __slots__ = ()

    @abstractmethod
    def close(self) -> object:
        """Release what is held (idempotent)."""

    def _leave(self, *, succeeded: bool) -> None:
        self.close()


class Committing(_Scoped):
    __slots__ = ()

    @abstractmethod
    def close(self) -> object:
        """Write what is pending and move the output into place."""

    @abstractmethod
    def abort(self) -> None:
        """Remove what was written; the file that was there before stays as it was."""

    def _leave(self, *, succeeded: bool) -> None:
        if succeeded:
            self.close()
        else:
            self.abort()


class Running(_Scoped):
    __slots__ = ()

    @abstractmethod
    def start(self) -> Self:
        """Start and wait until ready."""

    @abstractmethod
    def stop(self) -> None:
        """Stop and wait until gone (idempotent)."""

    def __enter__(self) -> Self:
        return self.start()

    def _leave(self, *, succeeded: bool) -> None:
        self.stop()
