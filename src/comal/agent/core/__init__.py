"""The loop and the turn: a live session, its model calls, tool calls and recovery."""
