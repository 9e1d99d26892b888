"""What is a secret in the config and on the command line: one rule (redact.secret_reason) for ci, rec and --listen.

Plain configuration (`MODE: result`, `AUTHOR_NAME: Alice Smith`, `--auth-mode oauth`) is never a
secret; a value is one by its name's words, its shape, its entropy, the header it goes in, or
because the user marks it; and no secret may be mcptape's own text (config load refuses it).
"""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from mcptape.config.load import load_config
from mcptape.errors import ConfigError
from mcptape.jsonrpc import dumps
from mcptape.record.http import HttpRecorder
from mcptape.redact.own_text import own_text
from mcptape.redact.policy import (
    argv_secrets,
    env_secrets,
    own_text_secrets,
    secret_name,
    secret_reason,
    token_like,
)
from mcptape.redact.redactor import Redactor
from mcptape.tape.events import EventBuilder

TOKEN = "Zq8" + "kR4mW9xT2vB7nL5pJ3hF6dG1"  # 27 random-looking characters, built here

# The plain values, and more configuration that names or values once made secret.
PLAIN = {
    "MODE": "result",
    "LOG_LEVEL": "verbose",
    "APP_ENV": "production",
    "REGION": "eu-west-1",
    "AUTHOR_NAME": "Alice Smith",
    "GIT_AUTHOR_EMAIL": "alice@example.com",
    "DATA": "tools/list",
    "FORMAT": "session",
    "OUTPUT": "golden",
    "AUTH_MODE": "oauth",
    "DESKTOP_SESSION": "ubuntu",
    "MAX_TOKENS": "4096",
    "TOKEN_URL": "https://auth.example.com/oauth/token",
    "PASSWORD_FILE": "/run/secrets/db",
    "GOOGLE_APPLICATION_CREDENTIALS": "/etc/gcp/key.json",
    "PWD": "/home/alice/project",
    "PUBLIC_KEY": "ssh-ed25519-public-part",
    "MODEL": "gpt-4o-mini-2024-07-18",
    "BUILD_SHA": "3f786850e387550fdab836ed7e6dc881de23001b",
}


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("API_KEY", True), ("apiKey", True), ("X-Api-Key", True), ("STRIPE_KEY", True), ("AWS_SECRET_ACCESS_KEY", True),
        ("GITHUB_TOKEN", True), ("PGPASSWORD", True), ("DB_PASSWD", True), ("MYSQL_PWD", True), ("DB_PASS", True),
        ("BASIC_AUTH", True), ("NPM_CONFIG__AUTH", True), ("Authorization", True), ("Cookie", True), ("Set-Cookie", True),
        ("SESSION_ID", True), ("Mcp-Session-Id", True), ("CLIENT_SECRET", True), ("GCP_CREDENTIALS", True),
        ("PRIVATE_KEY", True), ("GPG_PRIVATE", True), ("--token", True), ("--client-secret", True),
        ("AUTHOR_NAME", False), ("GIT_AUTHOR_EMAIL", False), ("--author", False), ("--auth-mode", False),
        ("AUTH_MODE", False), ("SSH_AUTH_SOCK", False), ("MODE", False), ("PWD", True), ("OLDPWD", False),
        ("DESKTOP_SESSION", False), ("DBUS_SESSION_BUS_ADDRESS", False), ("AWS_ACCESS_KEY_ID", False),
        ("PUBLIC_KEY", False), ("PRIMARY_KEY", False), ("TOKEN_URL", False), ("PASSWORD_FILE", False),
        ("SECRET_NAME", False), ("TOKENIZER", False), ("MONKEY", False), ("PASS_THROUGH", False),
        ("PRIVATE_REGISTRY", False), ("X-Request-Id", False), ("Accept", False),
    ],
)  # fmt: skip
def test_names_are_read_as_words(name: str, secret: bool) -> None:
    assert secret_name(name) is secret


def test_plain_configuration_is_never_a_secret() -> None:
    for name, value in PLAIN.items():
        assert secret_reason(name, value) is None, name
        assert secret_reason(name, value, header=False) is None
    assert env_secrets(PLAIN) == {}


def test_a_value_is_secret_by_its_name_shape_entropy_header_or_mark() -> None:
    assert secret_reason("CALC_TOKEN", "short-but-named") == "its name says so"
    assert "github-token" in (secret_reason("PLAIN", "ghp_" + "aB3" * 12) or "")
    assert "url-password" in (secret_reason("DATABASE_URL", "postgres://app:pw@db/x") or "")
    assert secret_reason("BLOB", TOKEN) == "it looks random (high entropy)"
    assert secret_reason("Authorization", "letmein", header=True) == "it is sent in the Authorization header"
    assert secret_reason("REGION", "eu-west-1", marked=True) == "redact.env or redact.headers marks it"
    # redact.allow opts out of every reason; a ${VAR} reference is no value.
    assert secret_reason("CALC_TOKEN", "short-but-named", allow=["short-but-named"]) is None
    assert secret_reason("CALC_TOKEN", "${CALC_TOKEN}") is None
    # A name says nothing about a plainly non-secret value.
    assert secret_reason("API_KEY", "true") is None and secret_reason("TOKEN_TTL", "3600") is None


def test_token_like_finds_random_tokens_not_identifiers() -> None:
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits
    tokens = ["".join(rng.choices(alphabet, k=32)) for _ in range(500)]
    tokens = [t for t in tokens if any(c.isdigit() for c in t) and any(c.isupper() for c in t)]
    assert sum(map(token_like, tokens)) >= 0.95 * len(tokens)
    for ordinary in ("ProductionDatabaseV2Primary", "HelloWorldService2024Edition", "/srv/MyApp2/config/data.json",
                     "us-central1-docker.pkg.dev/proj/repo", "550e8400-e29b-41d4-a716-446655440000", "short1A"):
        assert not token_like(ordinary), ordinary


def test_the_command_line_keeps_configuration_and_strips_secrets() -> None:
    ghp = "ghp_" + "aB3" * 12
    argv = ["node", "srv.js", "--author", "Alice", "--auth-mode", "oauth", "--token", "t0k3n-v4lue",
            "--api-key=k-1", "--key-file", "./keys/dev.pem", "CALC_TOKEN=abc", "REGION=eu-west-1", ghp, TOKEN,
            "--url", "https://me:hunter22@db.example/x?api_key=zz&mode=1"]  # fmt: skip
    clean, found = argv_secrets(argv)
    assert clean == ["node", "srv.js", "--author", "Alice", "--auth-mode", "oauth", "--token", "<redacted>",
                     "--api-key=<redacted>", "--key-file", "./keys/dev.pem", "CALC_TOKEN=<redacted>", "REGION=eu-west-1",
                     ghp, "<redacted>", "--url", "https://me:<redacted>@db.example/x?api_key=<redacted>&mode=1"]  # fmt: skip
    # The GitHub token stays for the redactor (it names its kind in the tape header); a random
    # value without a shape is only found in the traffic if it is known.
    assert sorted(found.values()) == sorted(["t0k3n-v4lue", "k-1", "abc", TOKEN, "hunter22", "zz"])


def test_rec_environment_rule() -> None:
    env = {**PLAIN, "GITHUB_TOKEN": "ghp_" + "aB3" * 12, "AWS_SECRET_ACCESS_KEY": TOKEN[::-1] + "/x+Y",
           "CI_JOB_JWT_SECRET_HEX": "a" * 8, "RUNNER_TEMP": "/home/runner/work/_temp"}  # fmt: skip
    assert sorted(env_secrets(env)) == ["env.AWS_SECRET_ACCESS_KEY", "env.CI_JOB_JWT_SECRET_HEX", "env.GITHUB_TOKEN"]


def test_own_text_is_never_a_known_secret() -> None:
    # mcptape's own words (JSON keys, method names, report words, kinds), and parts of them.
    for word in ("result", "tools/list", "session", "golden", "structural", "struct", "inputSchema", "github-token"):
        assert own_text(word), word
    for value in ("Alice Smith", TOKEN, "production", "hunter22"):
        assert not own_text(value), value
    assert own_text("production", extra=["production-smoke"])
    assert own_text_secrets({"env.API_TOKEN": "result", "env.OK": TOKEN, "headers.Authorization": "Bearer initialize"}) == [
        "env.API_TOKEN",
        "headers.Authorization",
    ]
    # The redactor leaves such a value alone: a tools/list answer keeps its keys and method.
    r = Redactor(known={"env.API_TOKEN": "result", "env.DATA": "tools/list", "env.REAL": TOKEN}, home=None, user=None)
    b = EventBuilder()
    req = b.line("c2s", dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode())
    ans = b.line("s2c", dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": [], "note": TOKEN}}).encode())
    assert r.redact_event(req) == req
    out = r.redact_event(ans)
    assert out["msg"]["result"] == {"tools": [], "note": "<REDACTED:env.REAL>"}  # positive control


# --- the config: ci's known secrets -------------------------------------------------------------


def write_config(tmp_path: Path, env: str, extra: str = "", server: str = "calc") -> Path:
    path = tmp_path / "mcptape.yml"
    path.write_text(
        "version: 1\n"
        "servers:\n"
        f"  {server}:\n"
        "    command: [python, server.py, --author, Alice, --auth-mode, oauth, --token, \"${CALC_TOKEN:-dev-t0ken}\"]\n"
        f"    env: {env}\n"
        "  remote:\n"
        "    url: http://127.0.0.1:8765/mcp\n"
        "    headers: {Authorization: \"Bearer ${API_TOKEN:-t0k-abc-123}\", X-Client: mcptape-tests, Accept: text/plain}\n"
        "sessions:\n"
        f"  - name: production-smoke\n    server: {server}\n    steps: [list_tools]\n" + extra,
        encoding="utf-8",
    )
    return path


def test_config_plain_values_are_configuration_and_real_secrets_are_known(tmp_path: Path) -> None:
    env = "{" + ", ".join(f'{k}: "{v}"' for k, v in PLAIN.items()) + f', CALC_SECRET: "{TOKEN}"' + "}"
    loaded = load_config(write_config(tmp_path, env), env={})
    # The server's command is argv by the same rule; the variables are secrets by their names.
    assert loaded.secrets == {
        "env.CALC_SECRET": TOKEN,
        "command.--token": "dev-t0ken",
        "env.CALC_TOKEN": "dev-t0ken",
        "headers.Authorization": "Bearer t0k-abc-123",
        "env.API_TOKEN": "t0k-abc-123",
    }


def test_config_redact_env_and_headers_mark_values(tmp_path: Path) -> None:
    extra = "redact:\n  env: [REGION]\n  headers: [x-client]\n"
    loaded = load_config(write_config(tmp_path, "{REGION: eu-west-1, MODE: fast}", extra), env={})
    assert loaded.secrets["env.REGION"] == "eu-west-1"
    assert loaded.secrets["headers.X-Client"] == "mcptape-tests"
    assert "env.MODE" not in loaded.secrets


def test_config_a_mistyped_mark_is_an_error_not_a_silent_leak(tmp_path: Path) -> None:
    path = write_config(tmp_path, "{CALC_REGION: eu-west-1}", "redact:\n  env: [CALC_REGON]\n")
    with pytest.raises(ConfigError, match=rf'{path}:14: redact\.env\[0\]: "CALC_REGON" .*did you mean "CALC_REGION"'):
        load_config(path, env={})
    path = write_config(tmp_path, "{}", "redact:\n  headers: [X-Clinet]\n")
    with pytest.raises(ConfigError, match=r'redact\.headers\[0\]: "X-Clinet" is not a header.*did you mean "X-Client"'):
        load_config(path, env={})


@pytest.mark.parametrize(
    ("env", "line"),
    [("{SERVICE_TOKEN: result}", 5), ('{CALC_SECRET: "tools/list"}', 5), ("{DB_PASSWORD: production}", 5)],
)
def test_config_refuses_a_secret_that_is_mcptape_own_text(tmp_path: Path, env: str, line: int) -> None:
    path = write_config(tmp_path, env)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    message = str(info.value)
    name = env.strip("{}").split(":")[0]
    assert message.startswith(f"{path}:{line}: servers.calc.env.{name}: env.{name} is a secret")
    assert "redact.allow" in message and "own text" in message
    value = env.split(":", 1)[1].strip(' "}')
    assert value not in message.replace(f"env.{name}", "")  # the value itself is never printed
    # The fix the message gives works: allowed, the value is configuration.
    allowed = write_config(tmp_path, env, f"redact:\n  allow: [{value!r}]\n".replace("'", '"'))
    assert f"env.{name}" not in load_config(allowed, env={}).secrets


def test_learned_http_headers_follow_the_same_rule(tmp_path: Path) -> None:
    recorder = HttpRecorder(tmp_path / "t.tape.jsonl", "t")
    try:
        recorder.learn_secrets({"Authorization": f"Bearer {TOKEN}", "Cookie": "sid=abcdef123", "X-Api-Key": "k-12345",
                                "Mcp-Session-Id": "3f2a-77b1-session", "Accept": "application/json",
                                "User-Agent": "mcp-client/1.0 (Alice Smith)", "X-Mode": "result"})  # fmt: skip
        assert sorted(recorder._secrets) == [
            "headers.Authorization",
            "headers.Authorization.credential",
            "headers.Cookie",
            "headers.Mcp-Session-Id",
            "headers.X-Api-Key",
        ]
    finally:
        recorder.close()
