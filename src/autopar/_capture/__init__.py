"""``autopar.capture``: trace a function once per signature, then run it as one engine op per device
and lane segment. ``_trace`` records (an interpreter of the dispatcher), ``_segments`` cuts the trace
into engine ops, ``_cuts`` cuts a data-parallel backward at gradient buckets, ``_backends`` replays,
``_staged`` compiles, ``_program`` resolves and pushes a call, ``_function`` is the public wrapper and
its cache of traces, ``_closure`` finds the arrays a function closes over."""

from autopar._capture._function import Captured, capture

__all__ = ["Captured", "capture"]
