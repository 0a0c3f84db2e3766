"""The residual block's forward, shared by the two editions' ``Residual`` (a Module and a Gluon Block)."""

from __future__ import annotations

from typing import Any

from autopar.nn import functional as F


def residual_forward(block: Any, X: Any) -> Any:
    """relu(bn2(conv2(relu(bn1(conv1(X))))) + X), with X through conv3 first when the block has one."""
    Y = F.relu(block.bn1(block.conv1(X)))
    Y = block.bn2(block.conv2(Y))
    if block.conv3:
        X = block.conv3(X)
    return F.relu(Y + X)
