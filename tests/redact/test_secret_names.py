"""One table of secret names (redact/shapes.py), and every consumer reads it.

For each word a secret name can end with (`name_end_words`, derived from the table), a name
ending in it must be a secret's name for: the redactor's JSON fields and `key=value` text, the
verifier (a token left under it fails closed), the config's `env:` and `headers:`, and rec's argv.
Add a word to the table and a consumer that ignores it fails here. And prose under such a name
is not a secret.
"""

from __future__ import annotations

import json

import pytest

from mcptape.errors import SecretLeak
from mcptape.redact import detectors, shapes
from mcptape.redact.policy import argv_secrets, env_secrets, secret_reason
from mcptape.redact.redactor import Redactor

TOKEN = "k9Xv2Lq7Pz4Rt6WmB3"  # no provider shape: only the name makes it a secret
WORDS = shapes.name_end_words()


def test_the_table_holds_the_names_users_meet() -> None:
    for name in ("otp", "pin", "pwd", "pass", "passphrase", "session_key", "signing_key", "private_key",
                 "mnemonic", "seed_phrase", "client_secret", "db_pass", "dbPassword", "X-Api-Key"):
        assert shapes.secret_name(name) and shapes.name_class(name), name
    for name in ("public_key", "primary_key", "token_url", "password_file", "author", "path", "progressToken", "bypass"):
        assert shapes.name_class(name) is None, name


@pytest.mark.parametrize("word", WORDS)
def test_every_consumer_reads_every_name_in_the_table(word: str) -> None:
    name = f"my_{word}"
    assert shapes.secret_name(name) and shapes.name_class(name), f"{name}: the table's own readers"
    r = Redactor(home=None, user=None)
    field = {"kind": "response", "msg": {"result": {name: TOKEN}}}
    assert TOKEN not in r.line_bytes(field, "tape").decode(), f"{name}: redactor, JSON field"
    assert TOKEN not in r.redact_text(f"{name}={TOKEN}"), f"{name}: redactor, key=value text"
    assert TOKEN not in r.redact_text(f'{{"{name}": "{TOKEN}"}}'), f"{name}: redactor, JSON text"
    with pytest.raises(SecretLeak):
        Redactor(home=None, user=None).verify(json.dumps(field), "tape")  # the verifier
    env_name = name.upper()
    assert env_secrets({env_name: TOKEN}), f"{env_name}: config env / rec's environment"
    assert secret_reason(f"X-{name.replace('_', '-')}", TOKEN, header=True), f"{name}: headers"
    flag = "--" + name.replace("_", "-")
    _, found = argv_secrets([flag, TOKEN])
    assert TOKEN in found.values(), f"{flag}: rec's argv"


def test_a_word_added_to_the_table_reaches_the_text_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's key=value triggers are derived from the table, not a copy of it."""
    assert set(WORDS) >= {"otp", "pin", "pwd", "pass", "mnemonic", "key", "token", "secret", "session_id"}
    assert all(w.split("_")[0] in detectors._KV_TRIGGERS for w in WORDS)


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("signature", "Best regards, Ada", False),
        ("credentials", "stored in the vault", False),
        ("token", "The token budget is 4096", False),
        ("password", "required", False),
        ("password", "unset", False),
        ("api_key", "process.env.API_KEY", False),
        ("passphrase", "see the team wiki", False),
        ("password", "hunter22", True),
        ("password", "correcthorsebatterystaple", True),
        ("otp", "123456", True),
        ("pin", "4821", True),
        ("pin", "12", False),
        ("session_key", TOKEN, True),
        ("seed_phrase", "abandon ability able about above absent absorb abstract absurd abuse access accident", True),
    ],
)
def test_a_value_under_a_secret_name_is_one_when_it_looks_like_one(name: str, value: str, secret: bool) -> None:
    r = Redactor(home=None, user=None)
    out = r.redact_obj({name: value})
    assert (out[name] != value) is secret, (name, value, out)
