"""`servers.NAME.auth`: the OAuth client credentials of a server that wants a token (its model only).

What is done with them (discovery, the token request, renewal) is transports/oauth.py's; that the
secret and the key come from the environment and are secrets, config/secrets.py's. A module of its
own so models.py stays one screenful per idea.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

Algorithm = Literal["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]


def _fail(message: str) -> PydanticCustomError:
    """The error load_config turns into one file:line paragraph (as models.py's _fail)."""
    return PydanticCustomError("mcptape", "{message}", {"message": message, "at": (), "key": None})


class OAuthClientAuth(BaseModel):
    """OAuth client credentials (SEP-1046) for a server that wants a token, as a CI client gets one: the
    server's 401 leads to its authorization server (discovered from its protected resource metadata),
    whose token endpoint is asked for a token with the client credentials grant; it is renewed before
    it expires. The secret or key comes from the environment (`${VAR}`), and it and every token are
    secrets: scrubbed from tapes and reports like any."""

    model_config = ConfigDict(extra="forbid")

    client_id: str = Field(description="the OAuth client id (not a secret), e.g. ${MCP_CLIENT_ID}")
    client_secret: str | None = Field(
        default=None,
        description="the client secret, as ${VAR} (never written here): client_secret_basic or client_secret_post",
    )
    private_key: str | None = Field(
        default=None,
        description="instead of a secret: the client's PEM private key, as ${VAR}, signing a JWT assertion "
        "(private_key_jwt, RFC 7523)",
    )
    algorithm: Algorithm | None = Field(
        default=None, description="the assertion's signing algorithm (default: the key's own: RS256, ES256, ...)"
    )
    method: Literal["client_secret_basic", "client_secret_post"] | None = Field(
        default=None,
        description="how the secret goes to the token endpoint (default: what the server supports, Basic first)",
    )
    scope: str | None = Field(
        default=None, description="the scopes to ask for, space-separated (default: what the server asks for)"
    )

    @model_validator(mode="after")
    def _one_credential(self) -> OAuthClientAuth:
        if (self.client_secret is None) == (self.private_key is None):
            raise _fail("give the client's `client_secret` or its `private_key` (one of the two), each as ${VAR}")
        if self.private_key is not None and self.method is not None:
            raise _fail("`method` is how a client_secret is sent; a private_key signs an assertion instead")
        if self.client_secret is not None and self.algorithm is not None:
            raise _fail("`algorithm` signs the private_key's assertion; a client_secret has none")
        return self
