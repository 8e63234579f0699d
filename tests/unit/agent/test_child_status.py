"""A child's status row follows its receipt, also when a crash came between the two."""

from __future__ import annotations

import os
from pathlib import Path

from comal.agent.children.run import ChildTask, Delegation, child_session_id
from comal.agent.core.session import SessionOptions, open_session
from comal.agent.core.toolset import standard_tools
from comal.config import Config
from comal.ledger import Ledger
from comal.providers.scripted import ScriptedProvider
from comal.session import RECEIPT_KIND


async def test_a_receipt_read_back_repairs_the_status_a_crash_left_behind(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    ledger = Ledger.open(tmp_path / "home" / "ledger.db")
    config = Config(
        home=ledger.path.parent,
        config_dir=tmp_path / "cfg",
        workspace=workspace,
        env=dict(os.environ),
    )
    provider = ScriptedProvider(["the child's answer"])
    options = SessionOptions()
    delegation = Delegation(ledger, config, provider, standard_tools(), options)
    parent = open_session(
        ledger, config, provider, standard_tools(), options, workspace=workspace, bound=delegation
    )
    task = ChildTask("task", "look", "find the answer")
    first = await delegation.run("c1", task)
    child = child_session_id(parent.id, "c1")
    assert first.session_id == child
    assert ledger.session(child).status == "finished"
    # Killed after the receipt was appended, before its status row was set.
    ledger.set_status(child, "active")

    again = await delegation.run("c1", task)

    assert again.rebuilt
    assert again.answer == first.answer == "the child's answer"
    assert len(provider.requests) == 1  # read back, not run again
    assert ledger.session(child).status == "finished"
    assert len(ledger.entries(child, kinds=(RECEIPT_KIND,))) == 1
    ledger.close()
