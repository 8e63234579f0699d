"""The loopback static server a ChromePublish deploys: `python -m comal.plugins.chrome._serve`.

It runs as its own process (its own session), so it outlives the Comal process that started it:
recovery can then observe what it serves. On start it writes its pid file and appends one line
to the deploy log (how deploys are counted); it serves the folder's current bytes, so a file
changed behind the task's back is served changed and the digests tell.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: ARG002
        return None

    def end_headers(self) -> None:
        # Always the bytes on disk now: no cached copy may hide a change.
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


def main() -> None:
    """Serve `--dir` on 127.0.0.1:`--port` until killed."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid-file", type=Path, required=True)
    parser.add_argument("--deploy-log", type=Path, required=True)
    args = parser.parse_args()
    handler = functools.partial(_Quiet, directory=str(args.dir))
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    args.pid_file.write_text(str(os.getpid()), encoding="ascii")
    line = {"pid": os.getpid(), "port": args.port, "dir": str(args.dir), "at": int(time.time())}
    with args.deploy_log.open("a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")
    server.serve_forever()


if __name__ == "__main__":
    main()
