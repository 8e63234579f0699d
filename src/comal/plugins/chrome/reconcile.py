"""Recovery by observation for the governed Chrome task (the plugin's recovery adapters).

An orphaned ChromePublish (its intent recorded, no result) is settled from a fresh observation
made by this process, never by deploying or opening again:

- loopback: the server on the intended port must serve every intended file with its intended
  digest, and the browser on the intended CDP port must hold the governed tab (its exact
  intended URL). Then the call is credited `postcondition_observed: true` with a new snapshot;
  the text says what was observed and never that the original handler returned. Anything
  else (a changed file, no server, no tab) stays uncertain and says what it would need;
- remote: without the receipt the process never got, the publication stays blocked.

An orphaned ChromeRecover repeats exactly the reads it declared, which change nothing. The
observation itself passes this process's permissions (as a ChromeRecover call would).
"""

from __future__ import annotations

from collections.abc import Sequence

import comal.plugins.chrome._browser as br
from comal.messages import JSONObject, JSONValue, MediaPart
from comal.plugins.chrome._task import TaskNotes, TaskStore
from comal.plugins.chrome.publish import mismatches, served_digests, snapshot_json
from comal.plugins.chrome.tools import ChromeRecoverTool, known_reads, requested_reads
from comal.tools.base import ToolContext
from comal.tools.plugin import Reconciliation, RecordedCall

READY_WAIT_S = 30.0
"""How long a reconciled tab may take to satisfy the intent's `ready` expression."""


def _intent(started: JSONObject) -> JSONObject:
    prep = started.get("preparation")
    intent = prep.get("intent") if isinstance(prep, dict) else None
    return intent if isinstance(intent, dict) else {}


def _blocked(detail: str, needs: str, observed: JSONObject) -> Reconciliation:
    text = (
        "uncertain: no result was recorded for this ChromePublish call before the process "
        f"stopped, and a fresh observation does not confirm its intent: {detail}. It is "
        f"blocked and not run again; it would need {needs}. Repeating the identical publish "
        "needs the user's permission."
    )
    payload: JSONObject = {
        "postcondition_observed": False,
        "blocked": True,
        "detail": detail,
        "needs": needs,
    }
    return Reconciliation("uncertain", text, payload | observed)


class _Observer:
    """A reconciler observing the governed task through `observer` (its permissions apply)."""

    def __init__(self, store: TaskStore, observer: ChromeRecoverTool) -> None:
        self.store = store
        self.observer = observer


class PublishReconciler(_Observer):
    """Settles an orphaned ChromePublish from a fresh observation."""

    async def reconcile(
        self,
        started: JSONObject,
        ctx: ToolContext,
        history: Sequence[RecordedCall],  # noqa: ARG002
    ) -> Reconciliation:
        """See module docstring."""
        intent = _intent(started)
        decision = ctx.permissions.decide(self.observer, {"reads": ["url"]})
        if not decision.allowed:
            return _blocked(
                f"this process's permissions do not allow observing the tab ({decision.reason})",
                "permission to observe the governed tab (ChromeRecover)",
                {},
            )
        files = intent.get("files")
        if not isinstance(files, dict) or not files:
            return _blocked("the call left no intent", "a recorded intent", {})
        if intent.get("target") == "remote":
            return _blocked(
                "the remote publish command's receipt was never recorded",
                "a complete receipt (the published URL, every intended file's digest and a "
                "deployment identity) and a tab whose identity matches it",
                {"target": "remote"},
            )
        port, cdp, url = intent.get("server_port"), intent.get("cdp_port"), intent.get("url")
        if not (isinstance(port, int) and isinstance(cdp, int) and isinstance(url, str)):
            return _blocked("the intent has no port or URL", "a complete intent", {})
        served = served_digests(f"http://127.0.0.1:{port}", files)
        observed: JSONObject = {"target": "loopback", "url": url, "served": dict(served)}
        bad = mismatches(files, served)
        if bad:
            detail = f"what port {port} serves differs from the intended digests for " + ", ".join(
                bad
            )
            return _blocked(
                detail,
                "the served bytes to match the intent (the folder changed, or its server is gone)",
                observed,
            )
        if not br.cdp_alive(cdp):
            return _blocked(
                f"no browser answers on CDP port {cdp}",
                f"the governed tab {url} in a running browser",
                observed,
            )
        async with br.connected(cdp) as browser:
            page = br.find_tab(browser, url)
            if page is None:
                return _blocked(
                    f"the browser holds no tab with the governed identity {url}",
                    f"the governed tab {url}",
                    observed,
                )
            ready = intent.get("ready")
            wait = ready if isinstance(ready, str) else None
            if not await br.wait_ready(page, wait, READY_WAIT_S):
                return _blocked(
                    f"the governed tab never became ready ({ready})",
                    "the page to become ready",
                    observed,
                )
            snap = await br.snapshot(page)
        self.store.save(TaskNotes(str(intent.get("folder")), port, cdp, url))
        observed |= {
            "postcondition_observed": True,
            "deploy_observed": True,
            "open_observed": True,
            **snapshot_json(snap),
        }
        text = (
            "postcondition_observed: true. No result was recorded for this ChromePublish call "
            "before the process stopped. A fresh observation shows its intended state: the "
            f"loopback server on port {port} serves every intended file ({len(files)}) with its "
            f"intended digest, and the browser holds the governed tab {url}. Deploy and Open are "
            "not repeated.\n"
            f"Snapshot: final URL {snap.final_url} · title {snap.title!r} · DOM "
            f"{snap.dom_digest} · screenshot {len(snap.screenshot):,} bytes (media of this "
            "result).\nThe browser checks (ChromeFinish) and finish_call are still required."
        )
        media = (MediaPart("image/png", br.b64(snap.screenshot)),)
        return Reconciliation("postcondition_observed", text, observed, media)


class RecoverReconciler(_Observer):
    """Repeats only the known reads of an orphaned ChromeRecover."""

    async def reconcile(
        self,
        started: JSONObject,
        ctx: ToolContext,
        history: Sequence[RecordedCall],  # noqa: ARG002
    ) -> Reconciliation:
        """Make the declared reads again (reads change nothing)."""
        raw = started.get("arguments")
        args: JSONObject = raw if isinstance(raw, dict) else {}
        reads = requested_reads(args)
        decision = ctx.permissions.decide(self.observer, args)
        if not decision.allowed:
            text = f"uncertain: not repeated; this process does not allow it ({decision.reason})"
            return Reconciliation("uncertain", text, {"postcondition_observed": False})
        outcome = await known_reads(self.store, reads)
        body = outcome.output.decode("utf-8", "replace")
        repeated: JSONValue = list(reads)
        observed: JSONObject = {"repeated_reads": repeated, "postcondition_observed": False}
        if outcome.observed:
            observed |= outcome.observed
        if outcome.is_error:
            text = f"uncertain: the known reads {reads} could not be repeated: {body}"
            return Reconciliation("uncertain", text, observed)
        text = (
            f"The earlier ChromeRecover left no result; its known reads {reads} were made again "
            f"now (reads change nothing):\n{body}"
        )
        return Reconciliation("repeated", text, observed, outcome.media)
