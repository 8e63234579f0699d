"""Crash injection for child sessions: WorkDraft and WorkStepRun runs SIGKILLed, then resumed.

Run: `.venv/bin/python -m perf.crash_children [--trials 60] [--seed 1] [--dir DIR]`.

Trials alternate two scripted coordinators, each a real `python -m comal -p TASK` process
against its own fake server process (`turn_by = "answered"`, one child script per marker):

- **draft**: a board, then `WorkDraft` of `doc.md` in three fragments (each child reads a file,
  then answers its fragment), the board marked done, `finish_call` (check: `doc.md` exists);
- **step**: a board whose step has a check, then `WorkStepRun` (the child writes the file and
  appends one line to a log with Bash), a repair-if-missing command, the board marked done,
  `finish_call` (which runs the step's check again).

Each run is SIGKILLed once or twice — after a uniform random delay, or a short random delay
after a chosen entry appears in *any* session of the tree (a child's task, a child's request, a
child's receipt or result, the coordinator's write preparation, its finish_call's start) — and
`python -m comal --resume PARENT -p` continues it; the last resume runs unkilled. Counted over
the whole tree: coordinators resumed to completion, fragments duplicated in `doc.md`, writes
repeated (a second recorded result for the coordinator's write, or the log line twice), finished
children run again (a second receipt or task message), calls left without a result in any
session, requests with an orphan call or result (the fake server's count), and committed entries
lost.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from comal.ledger import Ledger
from comal.session import RECEIPT_KIND, open_calls
from perf.crash_harness import (
    FakeServerProcess,
    KillPlan,
    bench_main,
    figures,
    kill_on_entry,
    make_workspace,
    run_once,
)

FRAGMENTS = {
    "a": "# Notes\n\nFragment a says hello.",
    "b": "## Middle\n\nFragment b reads the source.",
    "c": "## End\n\nFragment c says bye.",
}
DOC = "\n".join(text + "\n" for text in FRAGMENTS.values())
"""What `doc.md` must hold: every fragment exactly once, in plan order."""
_SLOW = {"delay_s": 0.01, "chunk_chars": 8}
TASKS = {"draft": "Draft doc.md in three fragments.", "step": "Run the greeting step."}


def _call(call_id: str, name: str, arguments: dict[str, object]) -> dict[str, object]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}], **_SLOW}


def _finish(answer: str) -> dict[str, object]:
    return _call("f1", "finish_call", {"answer": answer})


def draft_script() -> tuple[list[object], dict[str, list[object]]]:
    """The coordinator's and the children's turns of the draft scenario."""
    plan = [{"id": key, "prompt": f"[frag-{key}] write part {key}"} for key in FRAGMENTS]
    parent: list[object] = [
        _call("b1", "Board", {"set": [{"id": "doc", "text": "doc.md", "check": "test -f doc.md"}]}),
        _call("d1", "WorkDraft", {"path": "doc.md", "fragments": plan}),
        _call("b2", "Board", {"update": [{"id": "doc", "status": "done"}]}),
        _finish("doc.md is drafted."),
    ]
    agents: dict[str, list[object]] = {
        f"[frag-{key}]": [
            _call(f"r{key}", "Read", {"path": "source.txt"}),
            {"text": text, **_SLOW},
        ]
        for key, text in FRAGMENTS.items()
    }
    return parent, agents


def step_script() -> tuple[list[object], dict[str, list[object]]]:
    """The coordinator's and the child's turns of the step scenario."""
    check = "grep -qx hello greeting.txt"
    repair = "grep -qx hello greeting.txt || printf 'hello\\n' > greeting.txt"
    parent: list[object] = [
        _call("b1", "Board", {"set": [{"id": "greet", "text": "say hello", "check": check}]}),
        _call("s1", "WorkStepRun", {"step": "greet", "prompt": "[step-greet]"}),
        _call("x1", "Bash", {"command": repair}),
        _call("b2", "Board", {"update": [{"id": "greet", "status": "done"}]}),
        _finish("greeting.txt says hello."),
    ]
    child: list[object] = [
        _call("w1", "Write", {"path": "greeting.txt", "content": "hello\n"}),
        _call("l1", "Bash", {"command": "echo run >> log.txt"}),
        {"text": "greeting.txt says hello; the run is logged.", **_SLOW},
    ]
    return parent, {"[step-greet]": child}


def kill_plan(rng: random.Random, span: float, scenario: str) -> KillPlan:
    """A random kill over the run, or shortly after an entry somewhere in the tree."""
    write = "d1/write" if scenario == "draft" else "w1"
    choices = [
        KillPlan("uniform", rng.uniform(0.0, 0.95 * span)),
        KillPlan("child task", rng.uniform(0.0, 0.3), "message.user", children_only=True),
        KillPlan("child request", rng.uniform(0.0, 0.3), "provider.request", children_only=True),
        KillPlan("child receipt", rng.uniform(0.0, 0.05), RECEIPT_KIND),
        KillPlan("write", rng.uniform(0.0, 0.006), "tool.started", write),
        KillPlan("child result", rng.uniform(0.0, 0.05), "tool.result", children_only=True),
        # The coordinator's finish_call, while its checks run.
        KillPlan("finish", rng.uniform(0.0, 0.004), "tool.started", "f1"),
    ]
    return rng.choice(choices)


def _tree(ledger: Ledger, parent_id: str) -> list[str]:
    out, todo = [], [parent_id]
    while todo:
        sid = todo.pop(0)
        out.append(sid)
        todo.extend(ledger.children(sid))
    return out


def _parent(home: Path, workspace: Path) -> str | None:
    path = home / "ledger.db"
    if not path.exists():
        return None
    with Ledger.open(path) as ledger:
        return ledger.latest_session(str(workspace))


def _run_once(
    workspace: Path, home: Path, args: Sequence[str], plan: KillPlan | None, timeout: float
) -> tuple[int | None, bytes]:
    """Run Comal once, maybe killing it after the plan's entry appears in any session.

    Returns:
        The exit code (None when it outlived `timeout`) and stderr.
    """

    def watch(proc: subprocess.Popen[bytes], plan: KillPlan, deadline: float) -> None:
        path = home / "ledger.db"
        seq = 0

        def awaited(ledger: Ledger) -> bool:
            nonlocal seq
            sessions = ledger.sessions()
            top = next((s.id for s in sessions if s.parent_id is None), None)
            fresh = [e for s in sessions for e in ledger.entries(s.id, after_seq=seq)]
            if fresh:
                seq = max(e.seq for e in fresh)
            return any(plan.matches(e, top) for e in fresh)

        kill_on_entry(proc, path, plan, deadline, ready=path.exists, awaited=awaited, poll_s=0.002)

    code, _, err = run_once(workspace, home, args, plan, timeout, watch)
    return code, err


@dataclass
class TrialResult:
    """What one trial showed."""

    scenario: str
    completed: bool = False
    kills: int = 0
    duplicated_fragments: int = 0
    repeated_writes: int = 0
    rerun_children: int = 0
    orphan_calls: int = 0
    orphan_requests: int = 0
    lost_entries: int = 0
    rebuilt: int = 0
    plans: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _snapshot(home: Path, parent_id: str | None) -> dict[str, str]:
    if parent_id is None:
        return {}
    with Ledger.open(home / "ledger.db") as ledger:
        return {e.id: e.content_hash for s in _tree(ledger, parent_id) for e in ledger.entries(s)}


def _judge(result: TrialResult, home: Path, workspace: Path, parent_id: str) -> None:
    with Ledger.open(home / "ledger.db") as ledger:
        result.completed = ledger.session(parent_id).status == "finished"
        for sid in _tree(ledger, parent_id):
            entries = ledger.entries(sid)
            if not ledger.verify(sid).ok:
                result.lost_entries += 1
                result.problems.append(f"verify failed for {sid}")
            result.orphan_calls += len(open_calls(entries))
            if sid != parent_id:
                receipts = sum(1 for e in entries if e.kind == RECEIPT_KIND)
                tasks = sum(1 for e in entries if e.kind == "message.user")
                result.rerun_children += max(0, receipts - 1) + max(0, tasks - 1)
                if receipts == 0:
                    result.problems.append(f"child {sid} has no receipt")
                else:
                    # The status row follows the receipt, even when a kill came between them.
                    last = [e for e in entries if e.kind == RECEIPT_KIND][-1]
                    want = "finished" if last.payload.get("status") == "finished" else "failed"
                    status = ledger.session(sid).status
                    if status != want:
                        result.problems.append(f"child {sid} is {status}, its receipt says {want}")
            results = [e for e in entries if e.kind == "tool.result"]
            result.rebuilt += sum(
                1 for e in results if str(e.payload.get("call_id")) in ("d1", "s1")
            )
            written = [
                e
                for e in results
                if e.payload.get("call_id") == "d1/write"
                and e.payload.get("status") in ("ok", "postcondition_observed")
            ]
            result.repeated_writes += max(0, len(written) - 1)
    if result.scenario == "draft":
        doc = workspace / "doc.md"
        text = doc.read_text() if doc.exists() else ""
        for fragment in FRAGMENTS.values():
            result.duplicated_fragments += max(0, text.count(fragment) - 1)
        if text != DOC:
            result.problems.append(f"doc.md is {text!r}")
    else:
        log = workspace / "log.txt"
        runs = log.read_text().splitlines().count("run") if log.exists() else 0
        result.repeated_writes += max(0, runs - 1)
        greeting = workspace / "greeting.txt"
        if not greeting.exists() or greeting.read_text() != "hello\n":
            result.problems.append("greeting.txt does not say hello")
    if not result.completed:
        result.problems.append("coordinator not finished")


def run_trial(
    root: Path, rng: random.Random, span: float, scenario: str, kills: int | None = None
) -> TrialResult:
    """One trial: run the scenario, kill it once or twice, resume to the end, judge the tree."""
    parent, agents = draft_script() if scenario == "draft" else step_script()
    server = FakeServerProcess(root / "server", parent, turn_by="answered", agents=agents)
    result = TrialResult(scenario)
    try:
        workspace, home = make_workspace(root, server.base_url)
        (workspace / "source.txt").write_text("the source\n")
        if kills is None:
            kills = 2 if rng.random() < 0.6 else 1
        seen: dict[str, str] = {}
        parent_id: str | None = None
        for attempt in range(kills + 1):
            plan = kill_plan(rng, span, scenario) if attempt < kills else None
            args = ["-p", TASKS[scenario]] if parent_id is None else ["--resume", parent_id, "-p"]
            code, err = _run_once(workspace, home, args, plan, timeout=120)
            parent_id = _parent(home, workspace)
            if plan is not None and code == -signal.SIGKILL:
                result.kills += 1
                result.plans.append(plan.name)
            elif plan is None and code != 0:
                told = err.decode(errors="replace")[-400:]
                result.problems.append(f"final run exited {code}: {told}")
            now = _snapshot(home, parent_id)
            result.lost_entries += sum(1 for k, h in seen.items() if now.get(k) != h)
            seen.update(now)
        if parent_id is None:
            result.problems.append("no session was recorded")
        else:
            _judge(result, home, workspace, parent_id)
        result.orphan_requests = int(str(server.stats()["orphan_violations"]))
    finally:
        server.stop()
    return result


def measure_span(root: Path, scenario: str) -> float:
    """Seconds an unkilled run of a scenario takes (kill delays are drawn from it).

    Raises:
        RuntimeError: the unkilled scenario does not finish cleanly.
    """
    parent, agents = draft_script() if scenario == "draft" else step_script()
    server = FakeServerProcess(root / "server", parent, turn_by="answered", agents=agents)
    try:
        workspace, home = make_workspace(root, server.base_url)
        (workspace / "source.txt").write_text("the source\n")
        started = time.monotonic()
        code, err = _run_once(workspace, home, ["-p", TASKS[scenario]], None, 120)
        span = time.monotonic() - started
        result = TrialResult(scenario)
        parent_id = _parent(home, workspace)
        if parent_id is not None:
            _judge(result, home, workspace, parent_id)
    finally:
        server.stop()
    if code != 0 or result.problems:
        told = err.decode(errors="replace")[-2000:]
        raise RuntimeError(f"the unkilled {scenario} failed ({code}): {result.problems} {told}")
    return span


@dataclass
class Summary:
    """Totals over all trials."""

    trials: int
    completed: int
    kills: int
    duplicated_fragments: int
    repeated_writes: int
    rerun_children: int
    orphan_calls: int
    orphan_requests: int
    lost_entries: int
    rebuilt: int
    spans: dict[str, float]
    seconds: float
    plans: Counter[str]
    by_scenario: Counter[str]
    failures: list[str]

    @property
    def met(self) -> bool:
        """Every target of the issue: all resumed, nothing duplicated, repeated or orphaned."""
        return (
            self.completed == self.trials
            and self.duplicated_fragments == 0
            and self.repeated_writes == 0
            and self.rerun_children == 0
            and self.orphan_calls == 0
            and self.orphan_requests == 0
            and self.lost_entries == 0
        )

    def table(self) -> str:
        """The figures as a Markdown table."""
        pct = 100.0 * self.completed / self.trials if self.trials else 0.0
        spans = ", ".join(f"{k} {v:.1f} s" for k, v in sorted(self.spans.items()))
        scenarios = ", ".join(f"{k} {v}" for k, v in sorted(self.by_scenario.items()))
        rows = [
            ("trials (SIGKILLs)", f"{self.trials} ({self.kills}) · {scenarios}"),
            ("coordinators resumed to completion", f"{self.completed}/{self.trials} ({pct:.1f} %)"),
            ("duplicated fragments", str(self.duplicated_fragments)),
            ("repeated writes", str(self.repeated_writes)),
            ("finished children run again", str(self.rerun_children)),
            ("calls left without a result (whole tree)", str(self.orphan_calls)),
            ("requests with an orphan tool call or result", str(self.orphan_requests)),
            ("committed entries lost", str(self.lost_entries)),
            ("unkilled runs / whole benchmark", f"{spans} / {self.seconds:.0f} s"),
        ]
        return figures(rows, ("kill aimed at", self.plans))


def run(trials: int, seed: int, directory: Path | None = None, kills: int | None = None) -> Summary:
    """Run `trials` trials, alternating the draft and step scenarios.

    Args:
        kills: SIGKILLs aimed at each trial (default: one or two at random).
    """
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="comal-crash-children-", dir=directory) as tmp:
        root = Path(tmp)
        spans = {s: measure_span(root / f"warmup-{s}", s) for s in ("draft", "step")}
        rng = random.Random(seed)
        results = []
        for n in range(trials):
            scenario = ("draft", "step")[n % 2]
            results.append(run_trial(root / f"t{n}", rng, spans[scenario], scenario, kills))
    failures = [
        f"trial {n} ({r.scenario}): {'; '.join(r.problems)} (kills aimed at: {r.plans})"
        for n, r in enumerate(results)
        if r.problems or not r.completed
    ]
    return Summary(
        trials=trials,
        completed=sum(r.completed for r in results),
        kills=sum(r.kills for r in results),
        duplicated_fragments=sum(r.duplicated_fragments for r in results),
        repeated_writes=sum(r.repeated_writes for r in results),
        rerun_children=sum(r.rerun_children for r in results),
        orphan_calls=sum(r.orphan_calls for r in results),
        orphan_requests=sum(r.orphan_requests for r in results),
        lost_entries=sum(r.lost_entries for r in results),
        rebuilt=sum(r.rebuilt for r in results),
        spans=spans,
        seconds=time.monotonic() - started,
        plans=Counter(p for r in results for p in r.plans),
        by_scenario=Counter(r.scenario for r in results),
        failures=failures,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its table; exit 1 when a target is missed."""
    return bench_main(argv, "python -m perf.crash_children", 60, run, lambda s: s.met)


if __name__ == "__main__":
    sys.exit(main())
