"""d2l's ``Benchmark``: wall time of a block, printed on exit."""

from __future__ import annotations

import time
from types import TracebackType


class Benchmark:
    """``with Benchmark("GPU1 time"): ...`` prints ``GPU1 time: 0.5091 sec``.

    Measures wall time only: like the book's, it does not wait for pending
    work by itself (end the block with ``autopar.waitall()``). ``seconds``
    holds the measurement after the block.
    """

    def __init__(self, description: str = "Done") -> None:
        self.description = description
        self.seconds = 0.0
        self._start = 0.0

    def __enter__(self) -> "Benchmark":
        self._start = time.perf_counter()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.seconds = time.perf_counter() - self._start
        print(f"{self.description}: {self.seconds:.4f} sec")
