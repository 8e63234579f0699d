"""Providers: the `Provider` protocol, the three wire adapters, retries, windows and fakes.

Start at `base` (contract and events), `factory` (build a configured provider), `reply`
(`collect` a stream into a `Reply`) and `scripted` (`ScriptedProvider` for tests and demos).
"""
