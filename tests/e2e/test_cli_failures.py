"""The CLI never shows a traceback: every failure is one named line, the README's exit code, and
(in the JSON formats) an error object on stdout — early failures included.

What needs a process of its own runs `python -m comal` as a real subprocess: a closed stdin,
a full or read-only disk (a real tmpfs is mounted; the suite runs as root in CI, where `.ci/run`
runs it), a session locked by another process. The rest run the CLI in-process (`comal_here`,
the same `main`), where only what it prints, records and returns is checked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from comal.cli.failures import explain
from comal.errors import UnexpectedError
from comal.ledger import Ledger
from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import Run, comal, comal_here, configure, ledger_at

pytestmark = pytest.mark.e2e


def no_traceback(run: Run) -> None:
    assert "Traceback" not in run.stderr + run.stdout, run.stderr
    assert "Error:" not in run.stderr.replace("comal: ", ""), run.stderr


def shell(command: str, *, cwd: Path, env_home: Path) -> Run:
    """Run a shell line (for redirections such as `<&-`) with the test's ledger home."""
    return comal(
        command,
        cwd=cwd,
        env_home=env_home,
        program=("bash", "-c"),
        extra_env={"COMAL_PY": sys.executable},
    )


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 320 KiB tmpfs, unmounted afterwards."""
    point = tmp_path / "mnt"
    point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=320k", "tmpfs", str(point)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


# --- no traceback --------------------------------------------------------------------------


def test_closed_stdin_is_a_usage_error(workspace: Path, home: Path) -> None:
    run = shell('exec "$COMAL_PY" -m comal -p <&-', cwd=workspace, env_home=home)
    no_traceback(run)
    assert run.code == 2
    assert "-p needs a task" in run.stderr


def test_closed_stdin_with_a_task_still_runs(workspace: Path, home: Path) -> None:
    with FakeServer(["Done without stdin."]) as server:
        configure(workspace, server, "openai-chat")
        run = shell('exec "$COMAL_PY" -m comal -p "go" <&-', cwd=workspace, env_home=home)
    no_traceback(run)
    assert run.code == 0, run.stderr
    assert run.stdout == "Done without stdin.\n"


def test_full_disk_names_the_cause_and_loses_nothing(tmpfs: Path, tmp_path: Path) -> None:
    run = comal("demo", cwd=tmp_path, env_home=tmpfs, timeout=120)
    no_traceback(run)
    assert run.code == 3
    assert "DISK_FULL" in run.stderr
    assert "database or disk is full" in run.stderr
    assert "no transaction is active" not in run.stderr
    # What was recorded before the disk filled is intact, and reading still works.
    verified = comal("verify", cwd=tmp_path, env_home=tmpfs)
    assert verified.code == 0, verified.stdout + verified.stderr
    listed = comal("sessions", "--all", "--json", cwd=tmp_path, env_home=tmpfs)
    assert listed.code == 0
    assert len(json.loads(listed.stdout)) == 1


def test_read_only_home_is_named(tmpfs: Path, tmp_path: Path) -> None:
    assert comal("sessions", cwd=tmp_path, env_home=tmpfs).code == 0  # creates the ledger
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    for args in (("sessions",), ("-p", "hi")):
        run = comal(*args, cwd=tmp_path, env_home=tmpfs)
        no_traceback(run)
        assert run.code == 3
        assert "read-only file system" in run.stderr
        assert "set COMAL_HOME to a writable directory" in run.stderr
        assert "is not a Comal ledger" not in run.stderr


def test_verify_reads_a_healthy_ledger_on_a_read_only_home(tmpfs: Path, tmp_path: Path) -> None:
    with FakeServer(["Recorded."]) as server:
        configure(tmp_path, server, "openai-chat")
        assert comal("-p", "record something", cwd=tmp_path, env_home=tmpfs).code == 0
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    run = comal("verify", cwd=tmp_path, env_home=tmpfs)
    no_traceback(run)
    assert run.code == 0, run.stdout + run.stderr
    assert run.stdout.startswith(f"ok: ledger {tmpfs / 'ledger.db'}: ")
    assert "salvage" not in run.stdout + run.stderr


def test_an_unexpected_failure_is_one_line_with_exit_1() -> None:
    error = explain(RuntimeError("boom"))
    assert isinstance(error, UnexpectedError)
    assert error.exit_code == 1
    assert "RuntimeError: boom" in str(error)


# --- JSON error objects for early failures --------------------------------------------------


def _json_error(run: Run) -> dict[str, Any]:
    body = json.loads(run.stdout)
    assert isinstance(body, dict)
    assert body["status"] == "failed"
    error = body["error"]
    assert isinstance(error, dict)
    return error


def _stream_failed(run: Run) -> dict[str, Any]:
    (failed,) = [e for e in run.events() if e["type"] == "failed"]
    return failed


def in_json_formats(
    workspace: Path, home: Path, *args: str, run: Callable[..., Run] = comal_here
) -> tuple[Run, Run]:
    """`comal ARGS` run twice: with `--output-format json`, then `stream-json`."""
    as_json, as_stream = (
        run(*args, "--output-format", form, cwd=workspace, env_home=home)
        for form in ("json", "stream-json")
    )
    return as_json, as_stream


def test_unknown_session_is_an_error_object(workspace: Path, home: Path) -> None:
    with FakeServer([]) as server:
        configure(workspace, server, "openai-chat")
        as_json, as_stream = in_json_formats(workspace, home, "--resume", "ffffffff", "-p", "x")
    assert as_json.code == 3
    assert _json_error(as_json)["code"] == "UNKNOWN_SESSION"
    assert as_stream.code == 3
    assert _stream_failed(as_stream)["code"] == "UNKNOWN_SESSION"


def test_locked_session_is_an_error_object(workspace: Path, home: Path) -> None:
    with ledger_at(home) as ledger:
        sid = ledger.create_session(cwd=str(workspace))
        ledger.acquire_lock(sid)  # this live test process holds it
        with FakeServer([]) as server:
            configure(workspace, server, "openai-chat")
            # Another process: this one holds the lock.
            run, streamed = in_json_formats(workspace, home, "--resume", sid, "-p", "x", run=comal)
    assert run.code == 3
    assert _json_error(run)["code"] == "SESSION_LOCKED"
    assert _stream_failed(streamed)["code"] == "SESSION_LOCKED"


def test_bad_config_is_an_error_object(workspace: Path, home: Path) -> None:
    (workspace / ".comal").mkdir()
    (workspace / ".comal" / "config.toml").write_text("default_provider = [broken\n")
    run, streamed = in_json_formats(workspace, home, "-p", "x")
    no_traceback(run)
    assert run.code == 2
    assert _json_error(run)["code"] == "CONFIG"
    assert _stream_failed(streamed)["code"] == "CONFIG"


def test_subcommand_json_failure_is_an_error_object(workspace: Path, home: Path) -> None:
    run = comal_here("show", "ffffffff", "--json", cwd=workspace, env_home=home)
    assert run.code == 3
    assert json.loads(run.stdout)["error"]["code"] == "UNKNOWN_SESSION"


# --- exit codes, one per row of the README table --------------------------------------------


def test_exit_2_usage_max_turns_must_be_positive(workspace: Path, home: Path) -> None:
    for bad in ("0", "-1"):
        run = comal_here("-p", "x", "--max-turns", bad, cwd=workspace, env_home=home)
        assert run.code == 2
        assert "must be at least 1" in run.stderr
    with ledger_at(home) as ledger:
        assert ledger.sessions() == []


def test_exit_3_continue_with_no_session(workspace: Path, home: Path) -> None:
    with FakeServer([]) as server:
        configure(workspace, server, "openai-chat")
        run = comal_here("--continue", "-p", cwd=workspace, env_home=home)
    no_traceback(run)
    assert run.code == 3
    assert "no session recorded" in run.stderr


def test_exit_3_unknown_checkpoint_and_evidence(workspace: Path, home: Path) -> None:
    with ledger_at(home) as ledger:
        sid = ledger.create_session(cwd=str(workspace))
    checkpoint = comal_here("checkpoints", sid, "7", cwd=workspace, env_home=home)
    assert checkpoint.code == 3
    assert "UNKNOWN_CHECKPOINT" in checkpoint.stderr
    evidence = comal_here("evidence", sid, "evt_nothing", cwd=workspace, env_home=home)
    no_traceback(evidence)
    assert evidence.code == 3
    assert "EVIDENCE" in evidence.stderr


def test_exit_6_max_turns_reached(workspace: Path, home: Path) -> None:
    call = {"tool_calls": [{"id": "c1", "name": "Glob", "arguments": {"pattern": "*"}}]}
    with FakeServer([call, call]) as server:
        configure(workspace, server, "openai-chat")
        run = comal_here("-p", "loop", "--max-turns", "1", cwd=workspace, env_home=home)
    assert run.code == 6, run.stderr
    assert "MAX_TURNS" in run.stderr


# --- input ---------------------------------------------------------------------------------


def test_piped_stdin_is_appended_to_the_task(workspace: Path, home: Path) -> None:
    with FakeServer(["Summarised."]) as server:
        configure(workspace, server, "openai-chat")
        run = comal_here(
            "-p",
            "summarise this file",
            cwd=workspace,
            env_home=home,
            stdin="LINE ONE OF THE FILE\n",
        )
        sent = str(server.received[0].body)
    assert run.code == 0, run.stderr
    assert "summarise this file" in sent
    assert "LINE ONE OF THE FILE" in sent


def test_help_says_stdin_is_appended(workspace: Path, home: Path) -> None:
    run = comal_here("--help", cwd=workspace, env_home=home)
    assert "piped stdin is appended" in " ".join(run.stdout.split())


# --- output --------------------------------------------------------------------------------


def test_text_mode_prints_only_the_final_answer_on_stdout(workspace: Path, home: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    turns: list[Any] = [
        {
            "text": "Let me look at the file first.",
            "tool_calls": [{"id": "r1", "name": "Read", "arguments": {"path": "a.txt"}}],
        },
        "The file says alpha.",
    ]
    with FakeServer(turns) as server:
        configure(workspace, server, "openai-chat")
        quiet = comal_here("-p", "what is in a.txt?", cwd=workspace, env_home=home)
        server.add_turns(*turns)
        verbose = comal_here("-p", "again", "--verbose", cwd=workspace, env_home=home)
    assert quiet.code == 0, quiet.stderr
    assert quiet.stdout == "The file says alpha.\n"
    assert "Let me look" not in quiet.stderr  # stderr is not a terminal here: no progress
    assert verbose.stdout == "The file says alpha.\n"
    assert "Let me look at the file first." in verbose.stderr
    assert "→ Read" in verbose.stderr


# --- damaged ledgers -----------------------------------------------------------------------


def _recorded_ledger(home: Path, workspace: Path) -> tuple[str, list[str]]:
    from comal.messages import message_to_json, user_text

    with ledger_at(home) as ledger:
        sid = ledger.create_session(cwd=str(workspace), model="m")
        ids = [
            ledger.append(
                sid, "message.user", {"message": message_to_json(user_text(f"ask {n} " * 200))}
            ).id
            for n in range(30)
        ]
    return sid, ids


def _smash(path: Path, offset: int, length: int) -> None:
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(path.read_bytes())
    data[offset : offset + length] = b"\xff\x00\xfe" * (length // 3)
    path.write_bytes(bytes(data))


def test_verify_lists_damaged_entries_by_id_and_salvage_keeps_the_rest(
    workspace: Path, home: Path, tmp_path: Path
) -> None:
    import sqlite3

    sid, ids = _recorded_ledger(home, workspace)
    conn = sqlite3.connect(home / "ledger.db", isolation_level=None)
    conn.execute("DROP TRIGGER entries_no_update")
    conn.execute("UPDATE entries SET payload = '{\"forged\":1}' WHERE id IN (?, ?)", ids[3:5])
    conn.close()
    run = comal_here("verify", cwd=workspace, env_home=home)
    assert run.code == 3
    assert f"damaged entries (2): {ids[3]}, {ids[4]}" in run.stdout
    out = tmp_path / "salvaged.db"
    salvaged = comal_here("verify", "--salvage", str(out), cwd=workspace, env_home=home)
    assert salvaged.code == 0, salvaged.stdout + salvaged.stderr
    assert "salvaged 28 intact entries" in salvaged.stdout
    assert f"left behind (damaged): {ids[3]}, {ids[4]}" in salvaged.stdout
    with Ledger.open(out) as copy:
        assert copy.verify().ok
        kept = [e.id for e in copy.entries(sid)]
    assert kept == ids[:3] + ids[5:]


def test_a_damaged_file_is_named_by_every_command(workspace: Path, home: Path) -> None:
    sid, _ = _recorded_ledger(home, workspace)
    _smash(home / "ledger.db", 4096 * 3, 3000)
    with FakeServer([]) as server:
        configure(workspace, server, "openai-chat")
        runs = {
            "verify": comal_here("verify", cwd=workspace, env_home=home),
            "show": comal_here("show", sid, cwd=workspace, env_home=home),
            "resume": comal_here("--resume", sid, "-p", "go on", cwd=workspace, env_home=home),
            "sessions": comal_here("sessions", cwd=workspace, env_home=home),
        }
    for name, run in runs.items():
        no_traceback(run)
        assert run.code in (0, 3), (name, run.stderr)
    assert runs["verify"].code == 3
    assert "FAILED" in runs["verify"].stdout
    for name in ("show", "resume"):
        assert runs[name].code == 3, runs[name].stderr
        assert "LEDGER_DAMAGED" in runs[name].stderr
        assert "comal verify --salvage OUT" in runs[name].stderr


def test_a_window_below_the_fixed_parts_is_refused_before_a_session(
    workspace: Path, home: Path
) -> None:
    with FakeServer(["never sent"]) as server:
        configure(workspace, server, "openai-chat")
        run = comal_here(
            "-p",
            "hi",
            "--context-window",
            "1500",
            "--output-format",
            "json",
            cwd=workspace,
            env_home=home,
        )
        assert server.stats().requests == 0
    no_traceback(run)
    assert run.code == 5
    assert _json_error(run)["code"] == "CONTEXT_OVERHEAD"
    with ledger_at(home) as ledger:
        assert ledger.sessions() == []  # nothing left behind
