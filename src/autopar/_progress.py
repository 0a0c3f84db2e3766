"""A progress bar per training epoch, on stderr, silent when nobody watches.

``autopar train`` (and any loop over minibatches) wraps each epoch's batches::

    bar = EpochBar(train_iter, epoch=1, epochs=10)
    for images, labels in bar:
        ...
        bar.show(loss=loss_value)      # shown after the bar: "loss=0.512"

The bar is `tqdm`_'s (chosen over ``rich``: one small pure-Python package with
no dependencies of its own, the de facto standard for loop progress, and it
writes plain carriage-return updates that any terminal shows). It draws only
when the stream is a terminal, or when ``enabled=True`` forces it;
``enabled=False`` (a ``--quiet`` flag) silences it anywhere. Piped or captured
output therefore never fills with bar frames. When off, tqdm is not even
imported and the wrapper is a plain loop.

.. _tqdm: https://tqdm.github.io/
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TextIO, TypeVar

T = TypeVar("T")


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed or detached stream
        return False


class EpochBar(Generic[T]):
    """Iterate over ``items`` (one epoch), drawing ``epoch E/N`` with a bar on ``stream`` (stderr)."""

    def __init__(self, items: Iterable[T], epoch: int, epochs: int, *, total: int | None = None,
                 enabled: bool | None = None, stream: TextIO | None = None, unit: str = "batch") -> None:
        self.items = items
        self.description = f"epoch {epoch}/{epochs}"
        self.stream = sys.stderr if stream is None else stream
        self.enabled = _is_terminal(self.stream) if enabled is None else bool(enabled)
        if total is None and hasattr(items, "__len__"):
            total = len(items)  # type: ignore[arg-type]
        self.total = total
        self.unit = unit
        self._bar: Any = None

    def __iter__(self) -> Iterator[T]:
        if not self.enabled:
            yield from self.items
            return
        from tqdm import tqdm

        self._bar = tqdm(self.items, desc=self.description, total=self.total, file=self.stream, unit=self.unit,
                         leave=True, dynamic_ncols=True)
        try:
            yield from self._bar
        finally:
            self._bar.close()

    def show(self, **metrics: float) -> None:
        """Show ``name=value`` after the bar (a no-op when the bar is off)."""
        if self._bar is not None:
            self._bar.set_postfix(metrics, refresh=False)
