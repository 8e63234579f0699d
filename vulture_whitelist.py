"""Names `vulture` cannot see used: frameworks call them by name (`make lint` reads this file).

Each line names an attribute as `vulture` reports it. Add a name here only when something
outside Comal's code calls it; dead code is deleted instead.
"""

# ruff: noqa
_: object

# Textual calls these by name: composing, mounting, message handlers (`on_<widget>_<message>`),
# key bindings (`action_<name>`) and the class settings it reads.
_.compose
_.on_mount
_.on_button_pressed
_.on_option_list_option_selected
_.on_prompt_area_submitted
_.on_prompt_area_cancel_requested
_.on_worker_state_changed
_.action_interrupt
_.action_leave
_.action_dismiss_none
_.BINDINGS
_.CSS_PATH
_.TITLE
_.can_focus
_.border_title
_.border_subtitle

# `http.server` and `socketserver` read these of a handler or server class.
_.do_GET
_.do_POST
_.log_message
_.protocol_version
_.close_connection
_.daemon_threads

# uvicorn reads `should_exit` to stop the MCP test server.
_.should_exit

# pytest reads these by name: module marks and hooks.
_.pytestmark
_.pytest_terminal_summary

# The context-manager protocol passes the exception type, whether used or not.
_.exc_type

# The plugin contract: what a `comal.plugins` entry point names (docs/plugins.md).
_.PluginFactory

# An anchor names the reply that measured it; its tests compare anchors whole.
_.assistant_id
