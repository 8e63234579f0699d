"""Crash injection: scripted sessions killed with SIGKILL at random points, then resumed.

Run: `.venv/bin/python -m perf.crash_injection [--trials 200] [--seed 1] [--dir DIR]`.

Each trial is one real `python -m comal -p TASK` process in a fresh workspace (its own
`COMAL_HOME`, provider configured in `.comal/config.toml`) against its own fake server, which
runs as a separate process: it outlives every killed client, checks call/result pairing on
every request, and (`turn_by = "answered"`) serves again the turn a killed client never
received. The client is SIGKILLed once or twice per trial — after a uniformly random delay, or
a short random delay after a chosen ledger entry appears (the request of a slow stream, a Write
or Edit preparation, a sleeping Bash, a 4 MB output, the last large result before a
derivation, finish_call) — and `python -m comal --resume UUID -p` (no new prompt) continues it
each time; the last resume runs unkilled. No test hook exists in Comal: kills land by timing.

Reported per run: sessions resumed to completion (status `finished` through finish_call),
committed entries lost (an entry seen after a kill that is missing or changed later, or a call
the killed client reported finished with no result in the ledger; plus `verify()` failures),
duplicated writes (the workspace compared with the expected result: an append seen twice, an
Edit applied twice), requests with an orphan tool call or result (counted by the fake server),
uncertain and postcondition-observed results, and where the kills landed.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from comal.ledger import Entry, Ledger
from comal.messages import digest_bytes
from perf.crash_harness import (
    FakeServerProcess,
    KillPlan,
    bench_main,
    figures,
    kill_on_entry,
    ledger_of,
    make_workspace,
    run_once,
    session_entries,
    stream_events,
)

TASK = "Create greeting.txt saying hello world and log one run."
FINAL = "hello world\n"
WINDOW = 16_000
"""`--context-window` for the runs: small, so the large outputs force projections/derivations."""

ANSWER = "greeting.txt holds hello world; the run is logged."
DONE = {"update": [{"id": "greeting", "status": "done"}, {"id": "log", "status": "done"}]}
_SLOW = {"delay_s": 0.01, "chunk_chars": 12}
_BIG = "seq 1 2500"
_LARGE = "yes 'a line of a large build log' | head -c 4000000"
"""A 4 MB output: a long ledger append (it enters the prompt as preview + reference)."""


def _calls(turn: int, *calls: tuple[str, Mapping[str, object]]) -> dict[str, object]:
    return {
        "text": f"Step {turn}.",
        "tool_calls": [
            {"id": f"t{turn}c{n}", "name": name, "arguments": args}
            for n, (name, args) in enumerate(calls)
        ],
        **_SLOW,
    }


def scenario() -> list[dict[str, object]]:
    """The scripted model's turns (served with `turn_by = "answered"`)."""
    repair_write = "grep -qx hello greeting.txt || grep -qx 'hello world' greeting.txt"
    return [
        _calls(
            0,
            (
                "Board",
                {
                    "set": [
                        {
                            "id": "greeting",
                            "text": "greeting.txt holds hello world",
                            "check": "grep -qx 'hello world' greeting.txt",
                        },
                        {"id": "log", "text": "log.txt records the run", "status": "pending"},
                    ]
                },
            ),
        ),
        _calls(1, ("Write", {"path": "greeting.txt", "content": "hello\n"})),
        _calls(2, ("Bash", {"command": "sleep 0.3; echo run >> log.txt"})),
        # Verify each stage: an uncertain Write is never repeated, so a check repairs it.
        _calls(
            3,
            ("Bash", {"command": f"{repair_write} || printf 'hello\\n' > greeting.txt"}),
            ("Bash", {"command": _LARGE}),
        ),
        _calls(
            4,
            (
                "Edit",
                {
                    "path": "greeting.txt",
                    "edits": [{"old_string": "hello", "new_string": "hello world"}],
                },
            ),
            ("Bash", {"command": _BIG}),
        ),
        _calls(
            5,
            (
                "Bash",
                {
                    "command": "grep -qx 'hello world' greeting.txt"
                    " || printf 'hello world\\n' > greeting.txt"
                },
            ),
            ("Bash", {"command": _BIG + " | tac"}),
        ),
        _calls(6, ("Board", DONE)),
        _calls(7, ("finish_call", {"answer": ANSWER})),
        # Reached only when the finish above did not close the session (killed mid-call).
        _calls(8, ("Board", DONE), ("finish_call", {"answer": ANSWER})),
        {"text": "The checks failed; stopping here."},
    ]


# --- one trial ------------------------------------------------------------------------------


@dataclass
class TrialResult:
    """What one trial showed."""

    completed: bool = False
    kills: int = 0
    lost_entries: int = 0
    duplicated_writes: int = 0
    orphan_requests: int = 0
    uncertain: int = 0
    credited: int = 0
    kill_points: list[str] = field(default_factory=list)
    plans: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _kill_point(entries: list[Entry], workspace: Path) -> str:
    """Where a kill landed, judged from the last durable entry."""
    if not entries:
        return "before the session existed"
    last = entries[-1]
    if last.kind == "provider.request":
        return "during streaming"
    if last.kind == "tool.started":
        name = str(last.payload.get("name"))
        prep = last.payload.get("preparation")
        if isinstance(prep, dict):
            path = Path(str(prep.get("abs_path") or workspace / str(prep.get("path"))))
            current = digest_bytes(path.read_bytes()) if path.exists() else None
            if current == prep.get("digest_intended"):
                return f"after the {name} effect, before its result"
            return f"between {name} preparation and effect"
        return f"during {name}"
    if last.kind == "tool.result":
        return "after a result (next call, derivation or request)"
    if last.kind in ("checkpoint", "projection", "context.calibrated"):
        return f"after a {last.kind} (derivation)"
    return f"after {last.kind}"


def kill_plans(rng: random.Random, span: float) -> KillPlan:
    """A random kill: uniform over the run, or a short random delay after a chosen entry.

    Waiting for entries lands kills in the narrow windows too: between a Write's durable
    preparation and its atomic rename, after the rename before the result, during the 4 MB
    output's append, and during the derivation that follows the last large output.
    """
    choices = [
        KillPlan("uniform", rng.uniform(0.0, 0.9 * span)),
        KillPlan("streaming", rng.uniform(0.0, 0.4), "provider.request"),
        KillPlan("write", rng.uniform(0.0, 0.006), "tool.started", "t1c0"),
        KillPlan("edit", rng.uniform(0.0, 0.006), "tool.started", "t4c0"),
        KillPlan("sleeping bash", rng.uniform(0.0, 0.4), "tool.started", "t2c0"),
        KillPlan("large output", rng.uniform(0.0, 0.25), "tool.started", "t3c1"),
        KillPlan("derivation", rng.uniform(0.0, 0.08), "tool.result", "t5c1"),
        KillPlan("finish", rng.uniform(0.0, 0.08), "tool.started", "t7c0"),
    ]
    return rng.choice(choices)


def _run_once(
    workspace: Path, home: Path, args: Sequence[str], plan: KillPlan | None, timeout: float
) -> tuple[int | None, bytes, bytes]:
    """Run Comal once, maybe killing it after the plan's entry appears in the session."""

    def watch(proc: subprocess.Popen[bytes], plan: KillPlan, deadline: float) -> None:
        sid: str | None = None
        seq = 0
        path = ledger_of(home)
        # A server is looked at through one connection, not a new one every 10 ms.
        server = Ledger.open(path) if isinstance(path, str) else None

        def ready() -> bool:
            nonlocal sid
            if server is not None:
                sid = server.latest_session(str(workspace))
            else:
                sid, _ = session_entries(home, workspace)
            return sid is not None

        def awaited(ledger: Ledger) -> bool:
            nonlocal seq
            assert sid is not None
            fresh = ledger.entries(sid, after_seq=seq)
            if fresh:
                seq = fresh[-1].seq
            return any(plan.matches(e) for e in fresh)

        try:
            kill_on_entry(proc, path, plan, deadline, ready=ready, awaited=awaited, poll_s=0.001)
        finally:
            if server is not None:
                server.close()

    return run_once(workspace, home, args, plan, timeout, watch)


def _workspace_faults(workspace: Path) -> tuple[int, list[str]]:
    duplicates = 0
    problems: list[str] = []
    greeting = workspace / "greeting.txt"
    text = greeting.read_text() if greeting.exists() else None
    if text != FINAL:
        if text is not None and text.count("world") > 1:
            duplicates += 1
        problems.append(f"greeting.txt is {text!r}")
    log = workspace / "log.txt"
    runs = log.read_text().splitlines().count("run") if log.exists() else 0
    if runs > 1:
        duplicates += 1
        problems.append(f"log.txt has {runs} runs")
    return duplicates, problems


def run_trial(root: Path, rng: random.Random, span: float) -> TrialResult:
    """One trial against its own fake server process; see `trial`."""
    server = FakeServerProcess(root / "server", scenario(), turn_by="answered")
    try:
        return trial(root, server, rng, span)
    finally:
        server.stop()


def trial(root: Path, server: FakeServerProcess, rng: random.Random, span: float) -> TrialResult:
    """Run the scenario, kill it once or twice at random delays, resume to completion, check."""
    workspace, home = make_workspace(root, server.base_url)
    result = TrialResult()
    before = int(str(server.stats()["orphan_violations"]))
    kills = 1 if rng.random() < 0.7 else 2
    seen: dict[str, str] = {}
    reported: set[str] = set()
    sid: str | None = None
    for attempt in range(kills + 1):
        plan = kill_plans(rng, span) if attempt < kills else None
        if sid is None:
            args = ["-p", TASK, "--context-window", str(WINDOW)]
        else:
            args = ["--resume", sid, "-p", "--context-window", str(WINDOW)]
        code, out, err = _run_once(workspace, home, args, plan, timeout=120)
        for event in stream_events(out):
            if event.get("type") == "tool_finished":
                reported.add(str(event.get("call_id")))
        sid, entries = session_entries(home, workspace)
        if plan is not None and code == -signal.SIGKILL:
            result.kills += 1
            result.kill_points.append(_kill_point(entries, workspace))
            result.plans.append(plan.name)
        elif plan is None and code != 0:
            result.problems.append(f"final run exited {code}: {err.decode()[-400:]}")
        for entry in entries:
            if seen.setdefault(entry.id, entry.content_hash) != entry.content_hash:
                result.lost_entries += 1
        present = {e.id for e in entries}
        result.lost_entries += sum(1 for entry_id in seen if entry_id not in present)
    sid, entries = session_entries(home, workspace)
    answered = {str(e.payload.get("call_id")) for e in entries if e.kind == "tool.result"}
    missing = reported - answered
    if missing:
        result.lost_entries += len(missing)
        result.problems.append(f"reported finished but not in the ledger: {sorted(missing)}")
    if sid is not None:
        with Ledger.open(ledger_of(home)) as ledger:
            report = ledger.verify(sid)
            result.completed = ledger.session(sid).status == "finished"
        if not report.ok:
            result.lost_entries += 1
            result.problems.append(f"verify failed: {report}")
    statuses = Counter(str(e.payload.get("status")) for e in entries if e.kind == "tool.result")
    result.uncertain = statuses["uncertain"]
    result.credited = statuses["postcondition_observed"]
    result.duplicated_writes, faults = _workspace_faults(workspace)
    if result.completed:
        result.problems.extend(faults)
    else:
        result.problems.append("session not finished")
    result.orphan_requests = int(str(server.stats()["orphan_violations"])) - before
    return result


def measure_span(root: Path) -> float:
    """Seconds an unkilled run of the scenario takes (the range kill delays are drawn from).

    Raises:
        RuntimeError: the unkilled scenario does not finish.
    """
    server = FakeServerProcess(root / "server", scenario(), turn_by="answered")
    try:
        workspace, home = make_workspace(root, server.base_url)
        started = time.monotonic()
        args = ["-p", TASK, "--context-window", str(WINDOW)]
        code, _, err = _run_once(workspace, home, args, None, 120)
        span = time.monotonic() - started
        _, entries = session_entries(home, workspace)
    finally:
        server.stop()
    if code != 0 or _workspace_faults(workspace)[1]:
        raise RuntimeError(f"the unkilled scenario failed ({code}): {err.decode()[-2000:]}")
    if not any(e.kind == "checkpoint" for e in entries):
        raise RuntimeError("the unkilled scenario derived no checkpoint; lower WINDOW")
    return span


@dataclass
class Summary:
    """Totals over all trials."""

    trials: int
    completed: int
    kills: int
    lost_entries: int
    duplicated_writes: int
    orphan_requests: int
    uncertain: int
    credited: int
    span_s: float
    seconds: float
    kill_points: Counter[str]
    plans: Counter[str]
    failures: list[str]

    def table(self) -> str:
        """The figures as a Markdown table."""
        pct = 100.0 * self.completed / self.trials if self.trials else 0.0
        rows = [
            ("trials (SIGKILLs)", f"{self.trials} ({self.kills})"),
            ("sessions resumed to completion", f"{self.completed}/{self.trials} ({pct:.1f} %)"),
            ("committed entries lost", str(self.lost_entries)),
            ("duplicated writes", str(self.duplicated_writes)),
            ("requests with an orphan tool call or result", str(self.orphan_requests)),
            ("uncertain results", str(self.uncertain)),
            ("postcondition_observed results", str(self.credited)),
            ("unkilled run / whole benchmark", f"{self.span_s:.1f} s / {self.seconds:.0f} s"),
        ]
        return figures(
            rows, ("where the kills landed", self.kill_points), ("kill aimed at", self.plans)
        )


def run(trials: int, seed: int, directory: Path | None = None) -> Summary:
    """Run `trials` crash trials against one fake server process."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="comal-crash-", dir=directory) as tmp:
        root = Path(tmp)
        span = measure_span(root / "warmup")
        rng = random.Random(seed)
        results = [run_trial(root / f"t{n}", rng, span) for n in range(trials)]
    failures = [
        f"trial {n}: {'; '.join(r.problems)} (kills at: {', '.join(r.kill_points)})"
        for n, r in enumerate(results)
        if r.problems or not r.completed
    ]
    return Summary(
        trials=trials,
        completed=sum(r.completed for r in results),
        kills=sum(r.kills for r in results),
        lost_entries=sum(r.lost_entries for r in results),
        duplicated_writes=sum(r.duplicated_writes for r in results),
        orphan_requests=sum(r.orphan_requests for r in results),
        uncertain=sum(r.uncertain for r in results),
        credited=sum(r.credited for r in results),
        span_s=span,
        seconds=time.monotonic() - started,
        kill_points=Counter(p for r in results for p in r.kill_points),
        plans=Counter(p for r in results for p in r.plans),
        failures=failures,
    )


def _met(summary: Summary) -> bool:
    return (
        summary.completed == summary.trials
        and summary.lost_entries == 0
        and summary.duplicated_writes == 0
        and summary.orphan_requests == 0
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its table; exit 1 when a target is missed."""
    return bench_main(argv, "python -m perf.crash_injection", 200, run, _met)


if __name__ == "__main__":
    sys.exit(main())
