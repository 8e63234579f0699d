"""How a large output enters the view: whole while the window has room for it.

The seed sets one rule for small windows: an output over 20 KiB enters as a preview plus its
exact reference. A fixed byte count, though, means different things at different windows: at
32k an output of 20 KiB is a fifth of the room, at 128k a twentieth. Outputs the agent is about
to work with (a file it just read, the log it must fix) are the ones it uses next, and a preview
hides most of them, so the ceiling scales with the window:

    an output enters whole when its full text takes at most `whole_limit(usable)` tokens,
    the newest sixth of the usable room — the share stage 1 never projects

(`relief/projection.recent_tokens` reads the same rule). An output larger than that could not
even stay in the protected recent part of the view, so it would be the first thing any event
took out: it enters as a preview from the start. Under pressure, stage 1 projects outputs that
entered whole before anything else, oldest first (`relief/projection.py`).

At 32k (usable about 26k tokens) the sixth is ~4,300 tokens, under the seed's 20 KiB, which
therefore still decides there; at 64k about 9,300 tokens (30–40 KB of code), at 128k about
18,700 (60–75 KB). A ceiling set explicitly (`COMAL_LARGE_OUTPUT_THRESHOLD_BYTES`,
`[context] large_output_threshold_bytes`) is taken as given, at every window.
"""

from __future__ import annotations

DEFAULT_LARGE_OUTPUT_BYTES = 20 * 1024
"""The seed's ceiling: outputs up to this size always enter whole."""


def whole_limit(usable: int) -> int:
    """Most tokens an output over the byte ceiling may take and still enter whole: the newest
    sixth of the usable room (see module docstring)."""
    return max(usable, 0) // 6
