"""What a session offers around the loop: hooks, custom commands, mentions, /init, rewind,
`!command` and the /state view."""
