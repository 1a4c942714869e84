"""A local OpenAI-compatible HTTP endpoint for tests: the plumbing both test ChatServers share.

`LocalChatEndpoint` listens on 127.0.0.1 (a free port), parses each POST to
/v1/chat/completions (also /chat/completions) as JSON and hands it to the subclass's
`respond(handler, body, headers)`; any other path gets OpenAI's 404 error shape. The real
`openai` client talks to it through `base_url`; nothing of the client is mocked.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ROUTES = ("/v1/chat/completions", "/chat/completions")


def send_json(handler: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    """One JSON response; a client that already hung up (its timeout) is not an error here."""
    data = json.dumps(body).encode()
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


class LocalChatEndpoint:
    """Use as `with Server(...) as server:` and give the client `server.base_url`."""

    protocol_version = "HTTP/1.0"

    def respond(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], headers: dict[str, str]) -> None:
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self):
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = endpoint.protocol_version

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") not in ROUTES:
                    send_json(self, 404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                endpoint.respond(self, body, {k.lower(): v for k, v in self.headers.items()})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
