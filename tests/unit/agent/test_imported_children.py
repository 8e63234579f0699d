"""Imported Claude Code sub-agent chains are real children: listed in the coordinator's state,
found by the call that started them, and read back (no model call) when that call is rebuilt."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from comal.agent.children.run import ChildTask, Delegation, find_child
from comal.agent.core.session import SessionOptions, open_session
from comal.agent.core.toolset import standard_tools
from comal.agent.features.state import session_state
from comal.config import Config
from comal.importers import import_files
from comal.ledger import Ledger
from comal.providers.scripted import ScriptedProvider
from comal.session import RECEIPT_KIND, last_answer
from tests.unit.importers.conftest import trajectory

SPOTTER = "claude-code-2_spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger.open(tmp_path / "home" / "ledger.db")


async def test_an_imported_sub_agent_is_read_back_as_the_child_of_its_task_call(
    ledger: Ledger, tmp_path: Path
) -> None:
    source = trajectory(SPOTTER)
    shutil.copy(source, tmp_path / source.name)
    shutil.copytree(source.parent / source.stem, tmp_path / source.stem)
    parent, *children = import_files(ledger, [tmp_path / source.name])
    child = next(c for c in children if c.label.endswith("a2898e3"))
    origin = ledger.entries(child.session_id)[0].payload["origin"]
    assert isinstance(origin, dict)
    call = str(origin["parent_call"])

    assert find_child(ledger, parent.session_id, call) == child.session_id
    listed = {c.id: c for c in session_state(ledger, parent.session_id).children}
    assert listed[child.session_id].parent_call == call
    assert listed[child.session_id].receipt is None

    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = Config(
        home=ledger.path.parent,
        config_dir=tmp_path / "cfg",
        workspace=workspace,
        env=dict(os.environ),
    )
    provider = ScriptedProvider([])  # any model call would fail: none may be made
    options = SessionOptions()
    delegation = Delegation(ledger, config, provider, standard_tools(), options)
    open_session(
        ledger,
        config,
        provider,
        standard_tools(),
        options,
        session_id=parent.session_id,
        workspace=workspace,
        bound=delegation,
    )
    receipt = await delegation.run(call, ChildTask("task", "imported", "unused"))

    assert provider.requests == []
    assert receipt.session_id == child.session_id
    assert receipt.status == "finished"
    assert receipt.answer == last_answer(ledger.entries(child.session_id))
    assert receipt.answer
    (recorded,) = ledger.entries(child.session_id, kinds=(RECEIPT_KIND,))
    again = await delegation.run(call, ChildTask("task", "imported", "unused"))
    assert again.rebuilt
    assert again.answer == receipt.answer
    assert ledger.entries(child.session_id, kinds=(RECEIPT_KIND,)) == [recorded]
    ledger.close()
