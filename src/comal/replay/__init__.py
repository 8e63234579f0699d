"""The replay benchmark: recorded sessions through Comal's engine and peers' strategies.

`run_replay` replays files call by call with no model and returns per-session rows and
per-policy aggregates (`report.py` writes JSON, Markdown and PNG).
"""

from comal.replay.replayer import POLICIES, replay_transcript
from comal.replay.runner import ReplayResult, parse_policies, parse_windows, run_replay

__all__ = [
    "POLICIES",
    "ReplayResult",
    "parse_policies",
    "parse_windows",
    "replay_transcript",
    "run_replay",
]
