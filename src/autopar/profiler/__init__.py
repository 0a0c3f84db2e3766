"""Profiling: see which lanes were busy when, and how much they overlapped.

    with autopar.profile() as prof:
        ...                                   # any autopar work
    prof.export_chrome_trace("run.json")      # open in Perfetto / chrome://tracing
    print(prof.summary())                     # busy time per lane, overlap share
    prof.plot("run.png")                      # the timeline as a picture

The profiler is an engine listener (``engine.add_listener``): the engine takes
timestamps only while one is attached, so profiling off costs nothing but a
truth test per op. Times on stream lanes (CUDA) are device times: when the GPU
started and finished the op's kernels (read from CUDA events, on the host's
clock), not when the host issued them.
"""

from autopar.profiler._profile import LaneStats, OpRecord, Profile, Summary, profile

__all__ = ["LaneStats", "OpRecord", "Profile", "Summary", "profile"]
