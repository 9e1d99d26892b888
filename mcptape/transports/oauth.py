"""OAuth client credentials for an HTTP server that wants a token: what a non-interactive client (CI) does.

Owns the token of one server: discovery (the server's 401 names its protected resource metadata,
RFC 9728, else the well-known URIs; that names the authorization server, whose metadata is found at
RFC 8414's and OpenID's well-known URIs), the token request with the client credentials grant
(SEP-1046: the client authenticates with its secret, HTTP Basic or in the form, or with a JWT it signs
with its private key, RFC 7523's private_key_jwt), the `resource` it is for (RFC 8707), renewal before
it expires (its refresh token if one came, else the grant again), and the value of the
`Authorization` header. Knows nothing of MCP: the HTTP transport (http.py) asks `bearer()` for each
request and calls `unauthorized()` when the server answers 401.

Secrets: the client secret and key come from the config (`servers.NAME.auth`, interpolated from the
environment, known secrets of the redactor like any `${VAR}`); every token this module is given is
written to `learned` as it arrives, so the redactor knows it before anything is written (ci/session.py),
and no error message quotes a token, a secret or a key: an authorization server's own error
(`error`, `error_description`) is all that is said of a refusal.
"""

from __future__ import annotations

import base64
import re
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from mcptape.errors import ServerError

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
RENEW_BEFORE = 30.0  # seconds before a token expires that it is renewed
ASSERTION_LIFETIME = 300  # seconds a signed client assertion is valid
_PARAM = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


@dataclass(frozen=True)
class ClientCredentials:
    """What `servers.NAME.auth` gives: a client id and either its secret or its private key (PEM)."""

    client_id: str
    client_secret: str | None = None
    private_key: str | None = None
    algorithm: str | None = None  # of the assertion; None: the key's own (RS256, ES256/384/512, EdDSA)
    method: str | None = None  # client_secret_basic | client_secret_post; None: what the server supports
    scope: str | None = None  # None: what the server's 401, else its resource metadata, asks for


def challenge(www_authenticate: str | None) -> dict[str, str]:
    """The parameters of a `Bearer` challenge (resource_metadata, scope, error, ...), lower-case names."""
    if not www_authenticate:
        return {}
    scheme, _, rest = www_authenticate.strip().partition(" ")
    if scheme.lower() != "bearer":
        return {}
    return {m.group(1).lower(): (m.group(2) if m.group(2) is not None else m.group(3)) for m in _PARAM.finditer(rest)}


def resource_metadata_urls(server_url: str) -> list[str]:
    """RFC 9728's well-known URIs for a resource, the path-inserted one first."""
    p = urlsplit(server_url)
    path = p.path.rstrip("/")
    urls = [urlunsplit((p.scheme, p.netloc, f"/.well-known/oauth-protected-resource{path}", "", ""))] if path else []
    return [*urls, urlunsplit((p.scheme, p.netloc, "/.well-known/oauth-protected-resource", "", ""))]


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """Where an authorization server's metadata may be: RFC 8414's path-inserted URI, then OpenID's two."""
    p = urlsplit(issuer)
    path = p.path.rstrip("/")
    base = (p.scheme, p.netloc)
    if not path:
        return [urlunsplit((*base, "/.well-known/oauth-authorization-server", "", "")),
                urlunsplit((*base, "/.well-known/openid-configuration", "", ""))]
    return [urlunsplit((*base, f"/.well-known/oauth-authorization-server{path}", "", "")),
            urlunsplit((*base, f"/.well-known/openid-configuration{path}", "", "")),
            urlunsplit((*base, f"{path}/.well-known/openid-configuration", "", ""))]


def covers(resource: str, server_url: str) -> bool:
    """Is `server_url` the protected resource `resource` names (the same origin, its path or below it)?"""
    r, u = urlsplit(resource), urlsplit(server_url)
    if (r.scheme.lower(), (r.hostname or "").lower(), r.port) != (u.scheme.lower(), (u.hostname or "").lower(), u.port):
        return False
    base = r.path.rstrip("/")
    return u.path.rstrip("/") == base or u.path.startswith(base + "/")


def default_algorithm(private_key: str) -> str:
    """The JWS algorithm a PEM private key signs with unless told otherwise."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa  # only for a key: JWT assertions
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(private_key.encode("utf-8"), password=None)
    except (ValueError, TypeError) as e:
        # Not the key's text (it is a secret): what kind of problem it is.
        raise ServerError("auth.private_key is not a PEM private key without a password",
                          hint="give the PKCS#8 or traditional PEM text of the key (-----BEGIN PRIVATE KEY-----...)") from e
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        by_curve = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
        if key.curve.name in by_curve:
            return by_curve[key.curve.name]
    raise ServerError("auth.private_key: a key of this kind cannot sign a client assertion here",
                      hint="use an RSA, P-256/P-384/P-521 or Ed25519 key, or name auth.algorithm")


class OAuthClient:
    """The token of one server (see the module docstring); thread-safe, as the transport's readers are not one thread."""

    def __init__(self, credentials: ClientCredentials, server_url: str, *,
                 name: str = "auth", learned: dict[str, str] | None = None) -> None:
        self.credentials = credentials
        self.server_url = server_url
        # Its own client: the authorization server is another origin than the MCP server, mostly.
        self._client = httpx.Client(timeout=httpx.Timeout(10.0), follow_redirects=False)
        self._name = name  # the redactor's name for what is learned: <REDACTED:NAME.access_token>
        self._learned = learned if learned is not None else {}
        self._lock = threading.Lock()
        self._token: str | None = None
        self._expires_at: float | None = None
        self._refresh_token: str | None = None
        self._token_endpoint: str | None = None
        self._issuer: str | None = None
        self._methods: list[str] | None = None
        self._resource: str | None = None
        self._scope: str | None = credentials.scope

    def bearer(self) -> str | None:
        """The access token for the next request (renewed first if it is about to expire); None before
        the server has asked for one."""
        with self._lock:
            if self._token is not None and self._expires_at is not None and time.time() > self._expires_at - RENEW_BEFORE:
                self._renew()
            return self._token

    def unauthorized(self, www_authenticate: str | None) -> None:
        """The server answered 401: discover where tokens come from (once) and get a new one."""
        with self._lock:
            params = challenge(www_authenticate)
            if self._token_endpoint is None:
                self._discover(params)
            if self.credentials.scope is None and params.get("scope"):
                self._scope = params["scope"]  # what the server asks for now (a step-up) wins
            self._token = None
            self._grant()

    def close(self) -> None:
        self._client.close()

    # -- discovery ----------------------------------------------------------------------------

    def _discover(self, params: dict[str, str]) -> None:
        candidates = [params["resource_metadata"]] if params.get("resource_metadata") else []
        candidates += resource_metadata_urls(self.server_url)
        prm = self._first_json(candidates, "protected resource metadata (RFC 9728)")
        servers = prm.get("authorization_servers")
        if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
            raise ServerError(f"the protected resource metadata of {_safe(self.server_url)} names no authorization server",
                              hint="the server's /.well-known/oauth-protected-resource must list authorization_servers")
        if isinstance(prm.get("resource"), str):
            if not covers(prm["resource"], self.server_url):
                # RFC 9728 3.3: metadata for another resource must not get our credentials a token for it.
                raise ServerError(f"the protected resource metadata found for {_safe(self.server_url)} is for another "
                                  f"resource ({_safe(prm['resource'])}); no token is asked for it",
                                  hint="the server's metadata must name its own URL as `resource`")
            self._resource = prm["resource"]
        if self._scope is None and not params.get("scope") and isinstance(prm.get("scopes_supported"), list):
            self._scope = " ".join(s for s in prm["scopes_supported"] if isinstance(s, str)) or None
        meta = self._first_json(authorization_server_metadata_urls(servers[0]), "authorization server metadata")
        endpoint = meta.get("token_endpoint")
        if not isinstance(endpoint, str) or urlsplit(endpoint).scheme not in ("http", "https"):
            raise ServerError(f"the authorization server {_safe(servers[0])} names no token endpoint in its metadata")
        self._token_endpoint = endpoint
        self._issuer = meta["issuer"] if isinstance(meta.get("issuer"), str) else servers[0]
        methods = meta.get("token_endpoint_auth_methods_supported")
        self._methods = [m for m in methods if isinstance(m, str)] if isinstance(methods, list) else None

    def _first_json(self, urls: list[str], what: str) -> dict[str, Any]:
        tried: list[str] = []
        for url in dict.fromkeys(urls):
            try:
                resp = self._client.get(url, headers={"Accept": "application/json"}, timeout=10.0)
            except httpx.HTTPError as e:
                tried.append(f"{_safe(url)}: {type(e).__name__}")
                continue
            if resp.status_code == 200:
                try:
                    data = resp.json()
                except ValueError:
                    data = None
                if isinstance(data, dict):
                    return data
            tried.append(f"{_safe(url)}: HTTP {resp.status_code}")
        raise ServerError(f"{_safe(self.server_url)} asked for an OAuth token, and its {what} was not found "
                          f"({'; '.join(tried)})", hint="check the server's OAuth setup, or give the token in `headers:`")

    # -- tokens --------------------------------------------------------------------------------

    def _renew(self) -> None:
        if self._refresh_token is not None:
            try:
                self._request({"grant_type": "refresh_token", "refresh_token": self._refresh_token})
                return
            except ServerError:
                self._refresh_token = None  # refused (expired, revoked): the credentials get a new one
        self._grant()

    def _grant(self) -> None:
        form = {"grant_type": "client_credentials"}
        if self._scope:
            form["scope"] = self._scope
        self._request(form)

    def _request(self, form: dict[str, str]) -> None:
        assert self._token_endpoint is not None
        form = {**form, "resource": self._resource or self.server_url}
        headers = {"Accept": "application/json"}
        creds = self.credentials
        if creds.private_key is not None:
            form.update(client_id=creds.client_id, client_assertion_type=ASSERTION_TYPE,
                        client_assertion=self._assertion())
        elif self._method() == "client_secret_post":
            form.update(client_id=creds.client_id, client_secret=creds.client_secret or "")
        else:  # client_secret_basic (RFC 6749 2.3.1: each part form-encoded first)
            pair = f"{quote(creds.client_id, safe='')}:{quote(creds.client_secret or '', safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
        try:
            resp = self._client.post(self._token_endpoint, data=form, headers=headers, timeout=10.0)
        except httpx.HTTPError as e:
            raise ServerError(f"the token request to {_safe(self._token_endpoint)} failed: {type(e).__name__}") from e
        try:
            body = resp.json()
        except ValueError:
            body = None
        body = body if isinstance(body, dict) else {}
        token = body.get("access_token")
        if resp.status_code != 200 or not isinstance(token, str) or not token:
            said = " ".join(str(body[k])[:200] for k in ("error", "error_description") if isinstance(body.get(k), str))
            raise ServerError(
                f"{_safe(self._token_endpoint)} refused the {form['grant_type']} token request of client "
                f"{creds.client_id!r}: HTTP {resp.status_code}" + (f" ({said})" if said else ""),
                hint="check auth.client_id and the secret or key in the environment",
            )
        self._learn("access_token", token)
        self._token = token
        refresh = body.get("refresh_token")
        if isinstance(refresh, str) and refresh:
            self._learn("refresh_token", refresh)
            self._refresh_token = refresh
        expires = body.get("expires_in")
        self._expires_at = time.time() + float(expires) if isinstance(expires, int | float) and expires > 0 else None

    def _learn(self, kind: str, value: str) -> None:
        """Every token stays a known secret for the session, a renewed one beside the one before
        (`auth.access_token`, `auth.access_token.2`, ...): a server may echo either."""
        if value in self._learned.values():
            return
        name = f"{self._name}.{kind}"
        n = 1
        while (name if n == 1 else f"{name}.{n}") in self._learned:
            n += 1
        self._learned[name if n == 1 else f"{name}.{n}"] = value

    def _method(self) -> str:
        if self.credentials.method is not None:
            return self.credentials.method
        supported = self._methods or ["client_secret_basic"]
        return "client_secret_basic" if "client_secret_basic" in supported or "client_secret_post" not in supported \
            else "client_secret_post"

    def _assertion(self) -> str:
        """A client assertion (RFC 7523) for the token endpoint: signed with the client's private key."""
        import jwt  # PyJWT: only a client with a private key signs

        creds = self.credentials
        assert creds.private_key is not None
        now = int(time.time())
        claims = {"iss": creds.client_id, "sub": creds.client_id, "aud": self._issuer or self._token_endpoint,
                  "iat": now, "exp": now + ASSERTION_LIFETIME, "jti": str(uuid.uuid4())}
        algorithm = creds.algorithm or default_algorithm(creds.private_key)
        try:
            return jwt.encode(claims, creds.private_key, algorithm=algorithm)
        except (jwt.PyJWTError, ValueError, TypeError) as e:
            raise ServerError(f"auth.private_key cannot sign a client assertion with {algorithm}: {type(e).__name__}",
                              hint="name the key's algorithm in auth.algorithm (RS256, ES256, EdDSA, ...)") from e


def _safe(url: str) -> str:
    """A URL fit for a message: no userinfo, no query (either may hold a credential)."""
    p = urlsplit(url)
    port = f":{p.port}" if p.port else ""
    return f"{p.scheme}://{p.hostname or ''}{port}{p.path}"
