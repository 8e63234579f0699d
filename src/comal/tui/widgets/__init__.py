"""The TUI's widgets: transcript items, the prompt, the status bar and the confirmation modal."""
