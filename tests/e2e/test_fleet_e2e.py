"""A fleet sharing one ledger: two `comal -p` processes of two "hosts" (`COMAL_HOST_ID`) on two
sessions at once, `comal sessions` seeing both, and a resume from a third host; on both engines
(the PostgreSQL one is what several machines would share)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from comal.ledger import Ledger
from comal.ledger.engine import is_pg_url
from comal.testing.fake_server import FakeServer
from tests.e2e.headless_support import Run, comal, configure
from tests.pg_support import ENGINES, ledger_target

pytestmark = pytest.mark.e2e


@pytest.fixture(params=ENGINES)
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with ledger_target(request.param, tmp_path) as target:
        yield target if is_pg_url(target) else f"sqlite:{target}"


def test_two_hosts_run_two_sessions_on_one_ledger(shared: str, tmp_path: Path) -> None:
    spaces = [tmp_path / "ws-a", tmp_path / "ws-b"]
    turns: list[str | dict[str, Any]] = [
        {"tool_calls": [{"id": "c1", "name": "Bash", "arguments": {"command": "sleep 0.5"}}]},
        "done here",
    ]
    with FakeServer(list(turns)) as one, FakeServer(list(turns)) as two:
        for space, server in zip(spaces, (one, two), strict=True):
            space.mkdir()
            configure(space, server, "openai-chat")

        def run(space: Path, host: str) -> Run:
            env = {"COMAL_LEDGER_URL": shared, "COMAL_HOST_ID": host}
            return comal(
                "-p",
                "work",
                "--output-format",
                "stream-json",
                cwd=space,
                env_home=tmp_path / host,
                extra_env=env,
                timeout=120,
            )

        with ThreadPoolExecutor(2) as pool:
            runs = list(pool.map(run, spaces, ["host-a", "host-b"]))
    for done in runs:
        assert done.code == 0, done.stderr
    ids = [done.session_id() for done in runs]
    env = {"COMAL_LEDGER_URL": shared}
    listed = comal(
        "sessions", "--json", "--all", cwd=tmp_path, env_home=tmp_path / "c", extra_env=env
    )
    assert listed.code == 0, listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    assert set(rows) == set(ids)
    assert {rows[i]["status"] for i in ids} == {"active"}
    by_host = comal(
        "sessions",
        "--json",
        "--host",
        "host-b",
        cwd=tmp_path,
        env_home=tmp_path / "c",
        extra_env=env,
    )
    assert [row["id"] for row in json.loads(by_host.stdout)] == [ids[1]]
    # A third host continues the first session: the lease of host-a ended with its process.
    with FakeServer(["continued"]) as three:
        configure(spaces[0], three, "openai-chat")
        resumed = comal(
            "--resume",
            ids[0],
            "-p",
            "more",
            cwd=spaces[0],
            env_home=tmp_path / "host-c",
            extra_env={**env, "COMAL_HOST_ID": "host-c"},
        )
    assert resumed.code == 0, resumed.stderr
    assert "continued" in resumed.stdout
    with Ledger.open(shared) as ledger:
        locks = [e for e in ledger.entries(ids[0]) if e.kind.startswith("lock.")]
        assert ledger.verify().ok
    assert [(e.kind, e.payload["host_id"]) for e in locks] == [
        ("lock.acquired", "host-a"),
        ("lock.acquired", "host-c"),
    ]
