"""The per-epoch progress bar: drawn on terminals, silent elsewhere or when asked."""

from __future__ import annotations

import io

import pytest

from autopar._progress import EpochBar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        super().isatty()  # raises ValueError once closed, as a real stream does
        return True


def run(bar: EpochBar[int]) -> list[int]:
    seen = []
    for item in bar:
        seen.append(item)
        bar.show(loss=0.25 * item)
    return seen


@pytest.mark.parametrize("stream_type, enabled, draws", [
    (Terminal, None, True),       # catches: a bar never drawn
    (io.StringIO, None, False),   # catches: bar frames written into pipes and logs
    (Terminal, False, False),     # catches: --quiet ignored
    (io.StringIO, True, True),    # catches: enabled=True not forcing it
])
def test_bar_draws_only_when_watched_or_forced(stream_type, enabled, draws) -> None:  # type: ignore[no-untyped-def]
    stream = stream_type()
    assert run(EpochBar(range(3), epoch=2, epochs=5, enabled=enabled, stream=stream)) == [0, 1, 2]
    text = stream.getvalue()
    if draws:
        assert "epoch 2/5" in text and "3/3" in text and "loss=0.5" in text, text
    else:
        assert text == ""


def test_bar_without_a_length_and_closed_after_an_error() -> None:
    stream = Terminal()
    bar = EpochBar((i for i in range(4)), epoch=1, epochs=1, stream=stream)
    with pytest.raises(RuntimeError, match="boom"):
        for item in bar:
            if item == 2:
                raise RuntimeError("boom")
    assert bar._bar is not None and bar._bar.disable  # tqdm marks a closed bar disabled
    assert "epoch 1/1" in stream.getvalue() and "2batch" in stream.getvalue().replace(" ", "")


def test_default_stream_is_stderr_and_a_closed_stream_is_not_a_terminal(capsys) -> None:  # type: ignore[no-untyped-def]
    assert run(EpochBar(range(2), epoch=1, epochs=1, enabled=True)) == [0, 1]
    captured = capsys.readouterr()
    assert captured.out == "" and "epoch 1/1" in captured.err
    closed = Terminal()
    closed.close()
    assert EpochBar(range(1), 1, 1, stream=closed).enabled is False
