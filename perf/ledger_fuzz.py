"""Damage fuzz: random byte flips and truncations of a real ledger file, then verify and salvage.

Run: `.venv/bin/python -m perf.ledger_fuzz [--trials 10000] [--seed 1]`.

One reference ledger is written through `Ledger` (three sessions, a child session, text and
binary tool outputs, one body spanning several pages), checkpointed into a single file. Each
trial damages a copy — 1 to 16 random bytes XOR-flipped anywhere, or the file truncated at a
random length — and then:

- `verify_file` must return a report and never raise anything but a named `ComalError`;
- `salvage` into a fresh ledger must do the same, and the copy must verify;
- every entry the copy holds must equal the reference (id, session, kind, payload, hash) and
  any body it names must equal the reference bytes — salvage never forges — unless `verify`
  flagged that entry (a well-formed id its index disagrees with is kept as the table records
  it, and reported);
- every entry still *intact* — its row reads back by seq through plain SQLite exactly as in
  the reference, with its body blob too — must be in the copy: salvage keeps every intact one;
- a damaged file (one where some reference entry is no longer intact) must be reported
  (`ok` false): no damage goes unreported.

Counted per run: trials, flips, truncations, files reported damaged, harmless mutations (every
entry intact, reported ok), entries intact and salvaged, failures of each rule.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from comal.errors import ComalError
from comal.ledger import Ledger
from comal.ledger.salvage import verify_file
from comal.messages import message_to_json, user_text

_ENTRY_SQL = "SELECT id, session_id, kind, payload, content_hash FROM entries WHERE seq = ?"


@dataclass(frozen=True, slots=True)
class Reference:
    """The undamaged ledger: its bytes, and every entry (by seq) and blob (by digest)."""

    data: bytes
    entries: dict[int, tuple[str, str, str, str, str]]
    bodies: dict[int, str]
    """seq → the blob digest its body names."""
    blobs: dict[str, bytes]


def build_reference(folder: Path) -> Reference:
    """Write the reference ledger in `folder` and read it back."""
    path = folder / "reference.db"
    with Ledger.open(path, durable=False) as ledger:
        for n in range(3):
            sid = ledger.create_session(cwd=f"/work/p{n}", model="m", title=f"task {n}")
            ledger.append(sid, "session.started", {"cwd": f"/work/p{n}", "model": "m"})
            for step in range(6):
                ask = user_text(f"step {step} of session {n}: " + "words " * (step * 5))
                ledger.append(sid, "message.user", {"message": message_to_json(ask)})
                body = (f"output {n}.{step}\n" * (40 * (step + 1))).encode()
                if step == 5:
                    body = bytes(range(256)) * 40  # a binary body over several pages
                ledger.append(
                    sid, "tool.result", {"call_id": f"c{step}", "name": "Bash"}, body=body
                )
            if n == 0:
                child = ledger.create_session(cwd="/work/p0", parent_id=sid)
                ledger.append(child, "message.user", {"message": message_to_json(user_text("x"))})
            ledger.set_status(sid, "finished")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")  # one self-contained file to damage
    entries: dict[int, tuple[str, str, str, str, str]] = {}
    bodies: dict[int, str] = {}
    for seq, *row in conn.execute(
        "SELECT seq, id, session_id, kind, payload, content_hash FROM entries"
    ):
        entries[seq] = (row[0], row[1], row[2], row[3], row[4])
        body = json.loads(row[3]).get("body")
        if isinstance(body, dict):
            bodies[seq] = body["blob"]
    blobs = {h: bytes(d) for h, d in conn.execute("SELECT hash, data FROM blobs")}
    conn.close()
    return Reference(path.read_bytes(), entries, bodies, blobs)


def _intact(path: Path, ref: Reference) -> set[int]:
    """Seqs whose row and body read back exactly as in the reference, through plain SQLite."""
    found: set[int] = set()
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return found
    conn.text_factory = bytes
    try:
        for seq, expected in ref.entries.items():
            try:
                row = conn.execute(_ENTRY_SQL, (seq,)).fetchone()
                wanted = tuple(v.encode() for v in expected)
                if row is None or tuple(row) != wanted:
                    continue
                digest = ref.bodies.get(seq)
                if digest is not None:
                    blob = conn.execute(
                        "SELECT data FROM blobs WHERE hash = ?", (digest,)
                    ).fetchone()
                    if blob is None or not isinstance(blob[0], bytes):
                        continue  # gone, or its type byte flipped to another type
                    if blob[0] != ref.blobs[digest]:
                        continue
                found.add(seq)
            except (sqlite3.DatabaseError, UnicodeDecodeError):
                continue
    finally:
        conn.close()
    return found


def _salvaged(out: Path) -> tuple[list[tuple[str, str, str, str, str]], dict[str, bytes], bool]:
    with Ledger.open(out, durable=False) as ledger:
        ok = ledger.verify().ok
    conn = sqlite3.connect(out)
    rows = [
        (r[0], r[1], r[2], r[3], r[4])
        for r in conn.execute("SELECT id, session_id, kind, payload, content_hash FROM entries")
    ]
    blobs = {h: bytes(d) for h, d in conn.execute("SELECT hash, data FROM blobs")}
    conn.close()
    return rows, blobs, ok


def damage(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    """A flipped or truncated copy of `data`, and which it is."""
    if rng.random() < 0.5:
        return "truncation", data[: rng.randrange(len(data))]
    copy = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        copy[rng.randrange(len(copy))] ^= rng.randint(1, 255)
    return "flip", bytes(copy)


def run(trials: int, seed: int, folder: Path) -> Counter[str]:
    """Run the trials; the counter's `fail_*` keys count broken rules (all zero when sound)."""
    rng = random.Random(seed)
    ref = build_reference(folder)
    by_id = {row[0]: (seq, row) for seq, row in ref.entries.items()}
    counts: Counter[str] = Counter()
    for trial in range(trials):
        how, data = damage(ref.data, rng)
        counts[how] += 1
        target = folder / f"t{trial % 2}"
        target.mkdir(exist_ok=True)
        for old in target.iterdir():
            old.unlink()
        damaged = target / "ledger.db"
        damaged.write_bytes(data)
        intact = _intact(damaged, ref)
        counts["entries_intact"] += len(intact)
        flagged: set[str] = set()
        try:
            report = verify_file(damaged)
            ok = report.ok
            flagged = set(report.damaged)
        except ComalError:
            ok = False  # refused with a named error: reported
        except Exception:  # noqa: BLE001 - the rule under test: nothing else may escape
            counts["fail_verify_raised"] += 1
            continue
        is_damaged = len(intact) < len(ref.entries)
        counts["reported_damaged" if not ok else "reported_ok"] += 1
        if is_damaged and ok:
            counts["fail_unreported_damage"] += 1
        if not is_damaged and ok:
            counts["harmless"] += 1
        out = target / "salvaged.db"
        try:
            with Ledger.open(out, durable=False) as ledger:
                ledger.salvage_from(damaged)
        except ComalError:
            counts["salvage_refused"] += 1
            if intact:
                counts["fail_intact_lost"] += len(intact)
            continue
        except Exception:  # noqa: BLE001 - the rule under test
            counts["fail_salvage_raised"] += 1
            continue
        rows, blobs, verifies = _salvaged(out)
        if not verifies:
            counts["fail_salvage_does_not_verify"] += 1
        kept: set[int] = set()
        for row in rows:
            seq, expected = by_id.get(row[0], (0, None))
            if expected != row:
                # Kept as the table records it: allowed only when verify flagged it.
                counts["kept_flagged" if row[0] in flagged else "fail_forged_entry"] += 1
                continue
            digest = ref.bodies.get(seq)
            if digest is not None and blobs.get(digest) != ref.blobs[digest]:
                counts["fail_forged_body"] += 1
            kept.add(seq)
        counts["entries_salvaged"] += len(kept)
        counts["fail_intact_lost"] += len(intact - kept)
    counts["reference_entries"] = len(ref.entries)
    counts["reference_bytes"] = len(ref.data)
    return counts


def main() -> int:
    """Run from the command line and print the counts as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    # Memory-backed when the machine has it: each trial writes two small files.
    shm = Path("/dev/shm")
    where = str(shm) if shm.is_dir() else None
    with tempfile.TemporaryDirectory(prefix="comal-fuzz-", dir=where) as tmp:
        counts = run(args.trials, args.seed, Path(tmp))
    print(json.dumps(dict(sorted(counts.items())), indent=2))
    return 1 if any(k.startswith("fail_") and v for k, v in counts.items()) else 0


if __name__ == "__main__":
    sys.exit(main())
