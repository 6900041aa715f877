"""The time an actor's communication was in flight: the union of its operations' spans.

Why a union and not a sum: ``comm_total`` is "time any of the worker's communication was in
flight" (:mod:`clustersim.sim.metrics`), and spans overlap - the buckets of an overlapped
backward pass queue behind each other on one communicator, each span running from its
issue to its end, and an asynchronous reply overlaps the next push.  Summed, they put
``comm total`` at 183 % of the iteration on a four-bucket model and 242.5 % on
``bsp_100k``, where communication was in flight for 85 % of it (QA 11 F1's sibling F9).

Spans are added when they end, so in order of their ends (the engine settles an operation
at its end time, and the trace reader sorts by end): a new span can only overlap the
blocks that end at or after its start, which are the last ones of the list.  The blocks
are kept merged, so a worker keeps a few per iteration.
"""

from __future__ import annotations

__all__ = ["add_span"]


def add_span(blocks: list[list[float]], start: float, end: float) -> float:
    """Add the span ``[start, end]`` to ``blocks`` (disjoint ``[start, end]`` lists, in
    order, none ending after ``end``) and return the time it adds to their union."""
    if end <= start:
        return 0.0
    if not blocks or start > blocks[-1][1]:
        blocks.append([start, end])
        return end - start
    added = end - start
    lo = start
    while blocks and blocks[-1][1] >= start:
        b0, b1 = blocks.pop()
        # b1 <= end: the part of the block inside the span is [max(b0, start), b1]
        added -= max(b1 - max(b0, start), 0.0)
        if b0 < lo:
            lo = b0
    blocks.append([lo, end])
    return added
