"""A loopback stand-in for the few GitHub REST endpoints mcptape uses; ghapi is pointed at it.

GitHub itself cannot be reached from tests, so this speaks real HTTP on 127.0.0.1 (port 0) in a
thread: GET /user, GET/POST /repos/{o}/{r}/issues/{n}/comments (per_page/page pagination with
Link headers, as GitHub sends them), PATCH and DELETE /repos/{o}/{r}/issues/comments/{id}, and
GET /repos/{o}/{r}/pulls/{n}, and artifact attestations: POST /repos/{o}/{r}/attestations (what
actions/attest-build-provenance stores) and GET /repos/{o}/{r}/attestations/sha256:{hex} (what
`gh attestation verify` looks up by a file's digest). Tokens decide who a caller is and whether it may write:
a workflow GITHUB_TOKEN (an app: GET /user is 403, comments by `github-actions[bot]`), a user's
token, or a read-only token whose writes are 403 — as on a fork PR. Every request is recorded.
Comment ids grow with creation, as GitHub's do, and each request is handled under one lock, so
concurrent clients see a consistent thread (what the sticky comment's race handling relies on).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

ACTIONS_BOT = "github-actions[bot]"


@dataclass
class Token:
    login: str
    app: bool = False  # a workflow GITHUB_TOKEN: GET /user answers 403
    write: bool = True


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    token: str | None


@dataclass
class FakeGitHub:
    tokens: dict[str, Token] = field(default_factory=dict)
    comments: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    pulls: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    attestations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # repo -> stored bundles
    requests: list[Request] = field(default_factory=list)
    next_id: int = 1000
    # `hold_lists(n)`: the next n comment listings wait for each other, so n clients that list
    # before any of them creates really race (on GitHub: runs started by pushes close together).
    list_barrier: threading.Barrier | None = None
    held_lists: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # --- setup ---------------------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        fake = self

        class Handler(_Handler):
            github = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-github", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def add_comment(self, repo: str, number: int, login: str, body: str) -> dict[str, Any]:
        with self.lock:
            return self._new_comment(repo, number, login, body)

    def thread(self, repo: str, number: int) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(c) for c in self.comments.get((repo, number), [])]

    def hold_lists(self, n: int, timeout: float = 30.0) -> None:
        with self.lock:
            self.list_barrier = threading.Barrier(n, timeout=timeout)
            self.held_lists = n

    def writes(self) -> list[Request]:
        return [r for r in self.requests if r.method in ("POST", "PATCH", "DELETE")]

    # --- state ---------------------------------------------------------------------------------

    def comment_by_id(self, cid: int) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
        """The thread holding comment `cid`, and the comment; None when no thread has it."""
        for thread in self.comments.values():
            for c in thread:
                if c["id"] == cid:
                    return thread, c
        return None

    def _new_comment(self, repo: str, number: int, login: str, body: str) -> dict[str, Any]:
        self.next_id += 1
        cid = self.next_id
        comment = {
            "id": cid,
            "body": body,
            "user": {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"},
            "html_url": f"https://github.example/{repo}/pull/{number}#issuecomment-{cid}",
            "issue_url": f"{self.url}/repos/{repo}/issues/{number}",
        }
        self.comments.setdefault((repo, number), []).append(comment)
        return comment


class _Handler(BaseHTTPRequestHandler):
    github: FakeGitHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _token(self) -> str | None:
        auth = self.headers.get("Authorization") or ""
        m = re.match(r"(?:token|Bearer)\s+(\S+)$", auth)
        return m.group(1) if m else None

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _send_empty(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _handle(self, method: str) -> None:
        gh = self.github
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = json.loads(raw) if raw else None
        token = self._token()
        if method == "GET" and parts.path.endswith("/comments") and gh.list_barrier is not None:
            with gh.lock:
                barrier = gh.list_barrier if gh.held_lists > 0 else None
                gh.held_lists -= 1
            if barrier is not None:
                barrier.wait()  # outside the lock: the others must get here too
        with gh.lock:
            gh.requests.append(Request(method, parts.path, query, body, token))
            who = gh.tokens.get(token or "")
            if who is None:
                return self._send(401, {"message": "Bad credentials"})
            path = parts.path
            if method == "GET" and path == "/user":
                if who.app:
                    return self._send(403, {"message": "Resource not accessible by integration"})
                return self._send(200, {"login": who.login, "id": 1, "type": "User"})
            login = ACTIONS_BOT if who.app else who.login
            m = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", path)
            if m:
                repo, number = m.group(1), int(m.group(2))
                if method == "GET":
                    return self._list(repo, number, query)
                if method == "POST":
                    if not who.write:
                        return self._send(403, {"message": "Resource not accessible by integration"})
                    return self._send(201, gh._new_comment(repo, number, login, body["body"]))
            m = re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)", path)
            if m and method == "DELETE":
                if not who.write:
                    return self._send(403, {"message": "Resource not accessible by integration"})
                found = gh.comment_by_id(int(m.group(2)))
                if found is None:
                    return self._send(404, {"message": "Not Found"})
                thread, c = found
                thread.remove(c)
                return self._send_empty(204)
            if m and method == "PATCH":
                if not who.write:
                    return self._send(403, {"message": "Resource not accessible by integration"})
                found = gh.comment_by_id(int(m.group(2)))
                if found is None:
                    return self._send(404, {"message": "Not Found"})
                found[1]["body"] = body["body"]
                return self._send(200, found[1])
            m = re.fullmatch(r"/repos/([^/]+/[^/]+)/attestations", path)
            if m and method == "POST":
                if not who.write:
                    return self._send(403, {"message": "Resource not accessible by integration"})
                stored = gh.attestations.setdefault(m.group(1), [])
                stored.append({"id": len(stored) + 1, "bundle": body["bundle"]})
                return self._send(201, {"id": len(stored)})
            m = re.fullmatch(r"/repos/([^/]+/[^/]+)/attestations/sha256:([0-9a-f]{64})", path)
            if m and method == "GET":
                listed = [a for a in gh.attestations.get(m.group(1), []) if m.group(2) in _subject_digests(a["bundle"])]
                return self._send(200, {"attestations": listed}) if listed else self._send(404, {"message": "Not Found"})
            m = re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)", path)
            if m and method == "GET":
                pr = gh.pulls.get((m.group(1), int(m.group(2))))
                return self._send(200, pr) if pr else self._send(404, {"message": "Not Found"})
            return self._send(404, {"message": "Not Found"})

    def _list(self, repo: str, number: int, query: dict[str, str]) -> None:
        gh = self.github
        per_page = min(int(query.get("per_page", 30)), 100)
        page = max(int(query.get("page", 1)), 1)
        items = gh.comments.get((repo, number), [])
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        base = f"{gh.url}/repos/{repo}/issues/{number}/comments?per_page={per_page}&page="
        links = []
        if page < last:
            links += [f'<{base}{page + 1}>; rel="next"', f'<{base}{last}>; rel="last"']
        if page > 1:
            links += [f'<{base}1>; rel="first"', f'<{base}{page - 1}>; rel="prev"']
        self._send(200, chunk, {"Link": ", ".join(links)} if links else None)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")


def _subject_digests(bundle: dict[str, Any]) -> set[str]:
    """The sha256 digests of the subjects of an attestation bundle's in-toto statement."""
    import base64

    statement = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))
    return {subject["digest"]["sha256"] for subject in statement["subject"]}
