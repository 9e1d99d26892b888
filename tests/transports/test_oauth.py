"""OAuth client credentials (transports/oauth.py): discovery, the token request, renewal, what is learned.

The authorization server and the protected resource are a loopback HTTP server in the test (as GitHub is
tests/github_fake.py): the official suite's client-credentials scenarios run against the real client in
tests/integration/test_conformance_suite.py; here each rule is pinned where it can fail alone, and
`mcptape ci` runs against a server that echoes the token it was given, which must not reach the tape.
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from mcptape.errors import ServerError
from mcptape.transports.oauth import (
    ClientCredentials,
    OAuthClient,
    authorization_server_metadata_urls,
    challenge,
    covers,
    resource_metadata_urls,
)
from tests.conftest import mcptape_command, user_env


def test_a_bearer_challenge_is_read_with_quoted_and_bare_values() -> None:
    header = 'Bearer resource_metadata="https://mcp.test/.well-known/oauth-protected-resource", scope="a b", error=invalid_token'
    assert challenge(header) == {"resource_metadata": "https://mcp.test/.well-known/oauth-protected-resource",
                                 "scope": "a b", "error": "invalid_token"}
    assert challenge('Basic realm="x"') == {} and challenge(None) == {}


def test_well_known_uris_insert_the_path_first() -> None:
    assert resource_metadata_urls("https://mcp.test/v1/mcp") == [
        "https://mcp.test/.well-known/oauth-protected-resource/v1/mcp",
        "https://mcp.test/.well-known/oauth-protected-resource",
    ]
    assert authorization_server_metadata_urls("https://as.test/tenant") == [
        "https://as.test/.well-known/oauth-authorization-server/tenant",
        "https://as.test/.well-known/openid-configuration/tenant",
        "https://as.test/tenant/.well-known/openid-configuration",
    ]
    assert authorization_server_metadata_urls("https://as.test") == [
        "https://as.test/.well-known/oauth-authorization-server", "https://as.test/.well-known/openid-configuration"]


def test_metadata_covers_its_own_resource_only() -> None:
    assert covers("https://mcp.test/mcp", "https://mcp.test/mcp")
    assert covers("https://mcp.test", "https://mcp.test/mcp") and covers("https://MCP.test/", "https://mcp.test/mcp")
    assert not covers("https://other.test/mcp", "https://mcp.test/mcp")
    assert not covers("https://mcp.test/mc", "https://mcp.test/mcp")  # a prefix of a segment is another path
    assert not covers("http://mcp.test/mcp", "https://mcp.test/mcp")


class Fake:
    """A protected MCP endpoint (/mcp) and its authorization server (/as), on one loopback port."""

    def __init__(self, *, expires_in: int = 3600, methods: tuple[str, ...] = ("client_secret_basic",),
                 resource: str | None = None) -> None:
        self.expires_in = expires_in
        self.methods = methods
        self.resource = resource
        self.valid: set[str] = set()
        self.token_requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **(headers or {})}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/.well-known/oauth-protected-resource/mcp":
                    self._json(200, {"resource": fake.resource or f"{fake.base}/mcp", "authorization_servers": [f"{fake.base}/as"]})
                elif self.path == "/.well-known/oauth-authorization-server/as":
                    self._json(200, {"issuer": f"{fake.base}/as", "token_endpoint": f"{fake.base}/as/token",
                                     "token_endpoint_auth_methods_supported": list(fake.methods)})
                else:
                    self._json(404, {})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/as/token":
                    form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
                    fake.token_requests.append({**form, "authorization": self.headers.get("Authorization")})
                    token = f"tok-{secrets.token_hex(16)}"
                    fake.valid.add(token)
                    self._json(200, {"access_token": token, "token_type": "Bearer", "expires_in": fake.expires_in})
                    return
                token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                if token not in fake.valid:
                    meta = f"{fake.base}/.well-known/oauth-protected-resource/mcp"
                    self._json(401, {"error": "unauthorized"},
                               {"WWW-Authenticate": f'Bearer resource_metadata="{meta}", scope="mcp:tools"'})
                    return
                msg = json.loads(body)
                if "id" not in msg:
                    self.send_response(202)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                results = {"initialize": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                          "serverInfo": {"name": "echo-token", "version": "1"}},
                           "tools/list": {"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]},
                           # The server echoes the token it was given: the tape must not hold it.
                           "tools/call": {"content": [{"type": "text", "text": f"you are {token}"}]}}
                if msg["method"] not in results:
                    self._json(200, {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}})
                    return
                self._json(200, {"jsonrpc": "2.0", "id": msg["id"], "result": results[msg["method"]]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Fake:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake() -> Iterator[Fake]:
    with Fake() as f:
        yield f


def test_a_401_leads_to_a_token_for_the_resource_with_basic_credentials(fake: Fake) -> None:
    learned: dict[str, str] = {}
    client = OAuthClient(ClientCredentials("ci-bot", client_secret="s3cr:et"), f"{fake.base}/mcp", learned=learned)
    assert client.bearer() is None  # nothing is asked for before the server asks
    meta = f"{fake.base}/.well-known/oauth-protected-resource/mcp"
    client.unauthorized(f'Bearer resource_metadata="{meta}", scope="mcp:tools"')
    token = client.bearer()
    assert token in fake.valid and learned == {"auth.access_token": token}
    [asked] = fake.token_requests
    assert asked["grant_type"] == "client_credentials" and asked["scope"] == "mcp:tools"
    assert asked["resource"] == f"{fake.base}/mcp"
    assert base64.b64decode(asked["authorization"].removeprefix("Basic ")) == b"ci-bot:s3cr%3Aet"  # RFC 6749 2.3.1
    client.close()


def test_a_token_about_to_expire_is_renewed_and_both_stay_known(fake: Fake) -> None:
    fake.expires_in = 5  # inside RENEW_BEFORE: every request renews it
    fake.methods = ("client_secret_post",)
    learned: dict[str, str] = {}
    client = OAuthClient(ClientCredentials("ci-bot", client_secret="pw"), f"{fake.base}/mcp", learned=learned)
    client.unauthorized(None)  # no challenge: the well-known URI is found (token 1)
    first = client.bearer()  # renewed: token 2
    second = client.bearer()  # token 3
    assert first != second
    assert sorted(learned) == ["auth.access_token", "auth.access_token.2", "auth.access_token.3"]
    assert len(set(learned.values())) == 3 and {first, second} <= set(learned.values())
    assert fake.token_requests[0]["client_secret"] == "pw" and fake.token_requests[0]["authorization"] is None
    client.close()


def test_metadata_for_another_resource_gets_no_token() -> None:
    with Fake(resource="https://elsewhere.test/mcp") as other:
        client = OAuthClient(ClientCredentials("ci-bot", client_secret="pw"), f"{other.base}/mcp")
        with pytest.raises(ServerError, match="for another resource"):
            client.unauthorized(None)
        assert other.token_requests == []
        client.close()


def test_ci_gets_a_token_and_the_token_a_server_echoes_never_reaches_the_tape(fake: Fake, tmp_path: Path) -> None:
    (tmp_path / "mcptape.yml").write_text(
        "version: 1\nservers:\n  remote:\n"
        f"    url: {fake.base}/mcp\n    auth:\n      client_id: ci-bot\n      client_secret: ${{MCP_CLIENT_SECRET}}\n"
        "sessions:\n  - name: whoami\n    server: remote\n    steps: [list_tools, {call: whoami}]\n",
        encoding="utf-8")
    secret = "kq8Zt3vX9pLm2Wn7Rb4Yc6Hd"
    proc = subprocess.run(mcptape_command("ci", "--update-golden", "--json", "report.json"), cwd=tmp_path,
                          env=user_env(MCP_CLIENT_SECRET=secret), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tape = (tmp_path / "tapes" / "whoami.tape.jsonl").read_text(encoding="utf-8")
    assert "you are <REDACTED:auth.access_token>" in tape
    written = "".join(p.read_text(encoding="utf-8") for p in tmp_path.rglob("*") if p.is_file())
    written += proc.stdout + proc.stderr
    for token in fake.valid:
        assert token not in written
    assert secret not in written
    assert fake.token_requests and fake.token_requests[0]["grant_type"] == "client_credentials"

    # The same gate without the secret in the environment: exit 3, saying what failed, no traceback.
    proc = subprocess.run(mcptape_command("ci"), cwd=tmp_path, env=user_env(), capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr + proc.stdout
