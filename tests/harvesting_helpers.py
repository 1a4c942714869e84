"""A local GitHub REST server for the harvesting tests: serves recorded responses
(tests/data/harvesting/github) over real HTTP on 127.0.0.1, so PyGithub runs unmodified.

Repositories are folders named `owner__name`; their files become git blobs (real git blob shas),
a recursive tree and a branch head commit. Responses can be injected ahead of the recorded ones
(rate limits, server errors), and every request is logged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

DATA = Path(__file__).parent / "data" / "harvesting"
GITHUB_DATA = DATA / "github"


def git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class RecordedGitHub:
    def __init__(self, root: Path = GITHUB_DATA):
        self.root = root
        self.repos: dict[str, dict[str, bytes]] = {}
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            files = {f.relative_to(folder).as_posix(): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}
            self.repos[folder.name.replace("__", "/")] = files
        self.log: list[tuple[str, str, int]] = []  # (method, path, status)
        self.inject: dict[str, list[tuple[int, dict[str, str], bytes]]] = {}
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # -- repository model ---------------------------------------------------------------------

    def commit(self, repo: str) -> str:
        files = self.repos[repo]
        return hashlib.sha1("".join(f"{p}:{git_blob_sha(d)}\n" for p, d in sorted(files.items())).encode()).hexdigest()

    def tree_sha(self, repo: str) -> str:
        return hashlib.sha1(("tree" + self.commit(repo)).encode()).hexdigest()

    def write(self, repo: str, path: str, data: bytes) -> None:
        """Push a change: a new commit on the default branch."""
        with self.lock:
            self.repos[repo][path] = data

    def requests_to(self, fragment: str) -> list[tuple[str, str, int]]:
        return [entry for entry in self.log if fragment in entry[1]]

    def rate_limit_once(self, path_prefix: str, kind: str = "403") -> None:
        if kind == "403":
            body = (self.root / "rate_limit_403.json").read_bytes()
            headers = {"x-ratelimit-limit": "60", "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 1),
                       "x-ratelimit-resource": "core"}
            self.inject.setdefault(path_prefix, []).append((403, headers, body))
        else:
            body = (self.root / "secondary_429.json").read_bytes()
            self.inject.setdefault(path_prefix, []).append((429, {"retry-after": "1"}, body))

    def server_error_once(self, path_prefix: str, status: int = 502) -> None:
        self.inject.setdefault(path_prefix, []).append((status, {}, b'{"message": "Server Error"}'))

    # -- HTTP ------------------------------------------------------------------------------

    def __enter__(self) -> "RecordedGitHub":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _text(self, name: str, **values: str) -> bytes:
        text = (self.root / name).read_text()
        for key, value in {"base": self.base, **values}.items():
            text = text.replace("{" + key + "}", value)
        return text.encode()

    def respond(self, path: str, query: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            for prefix, queue in self.inject.items():
                if path.startswith(prefix) and queue:
                    return queue.pop(0)
        parts = path.strip("/").split("/")
        if parts[:2] == ["search", "repositories"]:
            return 200, {}, self._text("search.json")
        if parts[0] != "repos" or len(parts) < 4:
            return 404, {}, (self.root / "license_404.json").read_bytes()
        repo = f"{parts[1]}/{parts[2]}"
        if repo not in self.repos:
            return 404, {}, (self.root / "license_404.json").read_bytes()
        rest = parts[3:]
        if rest == ["license"]:
            recorded = self.root / f"license_{parts[2]}.json"
            if recorded.is_file():
                return 200, {}, self._text(recorded.name)
            return 404, {}, (self.root / "license_404.json").read_bytes()
        if rest[0] == "branches":
            commit = self.commit(repo)
            etag = f'W/"{commit}"'
            if headers.get("if-none-match") == etag:
                return 304, {"etag": etag}, b""
            return 200, {"etag": etag}, self._text("branch.json", repo=repo, branch=rest[1], commit=commit, tree=self.tree_sha(repo))
        if rest[:2] == ["git", "trees"]:
            entries, dirs = [], set()
            for p, data in sorted(self.repos[repo].items()):
                for i in range(1, p.count("/") + 1):
                    dirs.add("/".join(p.split("/")[:i]))
                sha = git_blob_sha(data)
                entries.append({"path": p, "mode": "100644", "type": "blob", "sha": sha, "size": len(data),
                                "url": f"{self.base}/repos/{repo}/git/blobs/{sha}"})
            for d in sorted(dirs):
                entries.append({"path": d, "mode": "040000", "type": "tree", "sha": hashlib.sha1(d.encode()).hexdigest(),
                                "url": f"{self.base}/repos/{repo}/git/trees/{d}"})
            body = {"sha": rest[2], "url": f"{self.base}/repos/{repo}/git/trees/{rest[2]}", "tree": entries, "truncated": False}
            return 200, {}, json.dumps(body).encode()
        if rest[:2] == ["git", "blobs"]:
            for data in self.repos[repo].values():
                if git_blob_sha(data) == rest[2]:
                    content = base64.encodebytes(data).decode()
                    body = {"sha": rest[2], "node_id": "B_" + rest[2][:8], "size": len(data), "encoding": "base64",
                            "content": content, "url": f"{self.base}/repos/{repo}/git/blobs/{rest[2]}"}
                    return 200, {}, json.dumps(body).encode()
        return 404, {}, (self.root / "license_404.json").read_bytes()

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server API
                url = urlparse(self.path)
                status, headers, body = outer.respond(url.path, url.query, {k.lower(): v for k, v in self.headers.items()})
                outer.log.append(("GET", url.path, status))
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        return Handler
