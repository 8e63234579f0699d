"""The session layer: what a recorded session is, read purely from its ledger entries.

It sits between `ledger/` (the book) and the readers above it (`context/`, `evidence/`,
`agent/`, `replay/`, the front ends), which read a session only through the names this front
door exports: which call a result answers (`pairing`), the session's status (`status`), its
facts and cost (`facts`, `cost`) and what it ran on (`ran_on`).
"""
