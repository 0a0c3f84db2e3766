"""``autopar.capture``: trace a function once per signature, then run it as one engine op per device
and lane segment (``_trace`` records, ``_segments`` cuts, ``_backends`` runs, ``_program`` pushes,
``_function`` is the public wrapper and its cache of traces)."""

from autopar._capture._function import Captured, capture

__all__ = ["Captured", "capture"]
