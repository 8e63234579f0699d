"""Custom instructions: which files, in which order, each headed by its path."""

from __future__ import annotations

from pathlib import Path

from comal.agent.core.instructions import load_instructions


def block(path: Path, text: str) -> str:
    return f'<instructions source="{path}">\n{text}\n</instructions>'


def test_order_is_config_dir_then_repository_root_down_to_workspace(tmp_path: Path) -> None:
    config = tmp_path / "config"
    repo = tmp_path / "repo"
    workspace = repo / "pkg" / "sub"
    workspace.mkdir(parents=True)
    config.mkdir()
    (repo / ".git").mkdir()
    (tmp_path / "AGENTS.md").write_text("above the repository: not read\n")
    (config / "AGENTS.md").write_text("user rules\n")
    (repo / "CLAUDE.md").write_text("repo claude\n")
    (repo / "AGENTS.md").write_text("repo agents\n")
    (repo / "pkg" / "COMAL.md").write_text("package rules\n")
    (workspace / "AGENTS.md").write_text("closest rules\n")

    loaded = load_instructions(workspace, config)

    expected = [
        (config / "AGENTS.md", "user rules"),
        (repo / "AGENTS.md", "repo agents"),
        (repo / "CLAUDE.md", "repo claude"),
        (repo / "pkg" / "COMAL.md", "package rules"),
        (workspace / "AGENTS.md", "closest rules"),
    ]
    assert loaded.sources == tuple(str(p) for p, _ in expected)
    assert loaded.text == "\n\n".join(block(p, t) for p, t in expected)
    assert loaded.problems == ()
    assert load_instructions(workspace, config) == loaded


def test_without_a_repository_only_the_workspace_is_read(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "AGENTS.md").write_text("parent: not read\n")
    (workspace / "COMAL.md").write_text("mine\n")
    loaded = load_instructions(workspace, tmp_path / "no-config")
    assert loaded.sources == (str(workspace / "COMAL.md"),)
    assert loaded.text == block(workspace / "COMAL.md", "mine")


def test_duplicates_empty_and_symlinked_files_are_taken_once(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("shared rules\n")
    (workspace / "CLAUDE.md").symlink_to(workspace / "AGENTS.md")
    (workspace / "COMAL.md").write_text("   \n")
    loaded = load_instructions(workspace, workspace)
    assert loaded.sources == (str(workspace / "AGENTS.md"),)


def test_same_content_in_two_places_is_taken_once(tmp_path: Path) -> None:
    config = tmp_path / "config"
    workspace = tmp_path / "ws"
    config.mkdir()
    workspace.mkdir()
    (config / "AGENTS.md").write_text("same\n")
    (workspace / "CLAUDE.md").write_text("same\n")
    loaded = load_instructions(workspace, config)
    assert loaded.sources == (str(config / "AGENTS.md"),)


def test_no_files_gives_empty_instructions(tmp_path: Path) -> None:
    loaded = load_instructions(tmp_path, tmp_path / "missing")
    assert (loaded.text, loaded.sources) == ("", ())


def test_undecodable_bytes_are_replaced(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_bytes(b"caf\xe9\n")
    loaded = load_instructions(tmp_path, tmp_path / "missing")
    assert loaded.text == block(tmp_path / "AGENTS.md", "caf\ufffd")
