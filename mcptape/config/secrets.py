"""Which values mcptape.yml hands a server are secrets: redact's rule applied to the config.

What is secret is redact/policy.py's rule (`secret_reason`); this module applies it to every value the
config hands a server and says at which line a refused secret is. The result is
`LoadedConfig.secrets`, the known values the redactor scrubs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcptape.config.locations import Loc, field_name, line_for, suggest
from mcptape.config.models import Config, HttpServer, StdioServer
from mcptape.errors import ConfigError
from mcptape.redact.policy import argv_secrets, own_text_secrets, secret_reason


def collect_secrets(
    config: Config, used: Mapping[Loc, dict[str, str]], display: str, lines: Mapping[Loc, int]
) -> dict[str, str]:
    """The redactor's known secrets: `env.NAME`/`headers.Name`/`command.--flag` -> value.

    What is a secret is redact/policy.py's rule (`secret_reason`), applied to every value the config
    hands a server: `env:` and `headers:` values, `command:`/`start:` arguments and `url:`, and
    every `${VAR}` interpolated anywhere (by the variable's name, or the field it fills).
    `redact.env`/`redact.headers` mark more, `redact.allow` exempts values. A secret that is also
    mcptape's own text (a JSON key, a method name, a report word, a session name) is refused
    here: scrubbing it would rewrite every tape and report (redact.own_text_secrets).
    """
    settings = config.redact
    allow = settings.allow
    marked_env = set(settings.env)
    marked_headers = {h.lower() for h in settings.headers}
    _check_marks(config, used, display, lines)
    secrets: dict[str, str] = {}
    where: dict[str, tuple[Loc, str]] = {}

    def add(name: str, value: str, server: str, loc: Loc, reason: str) -> None:
        if secrets.get(name, value) != value:  # same name, another server, another value
            name = f"{name}@{server}"
        secrets[name] = value
        where[name] = (loc, reason)

    for server_name, server in config.servers.items():
        base: Loc = ("servers", server_name)
        sections: list[tuple[str, Mapping[str, str]]] = [("env", server.env)]
        if isinstance(server, HttpServer):
            sections.append(("headers", server.headers))
        for section, values in sections:
            for key, value in values.items():
                loc = (*base, section, key)
                marked = key in marked_env if section == "env" else key.lower() in marked_headers
                reason = secret_reason(key, value, header=section == "headers", marked=marked, allow=allow)
                if reason:
                    # The redactor also knows the parts of it that are secrets alone (the token
                    # of `Bearer ${API_TOKEN}`), under this name unless the variable's says more.
                    add(f"{section}.{key}", value, server_name, loc, reason)
        if isinstance(server, HttpServer) and server.auth is not None:
            _auth_secrets(server_name, server, used, display, lines, add)
        command = server.command if isinstance(server, StdioServer) else (server.start or [])
        section = "command" if isinstance(server, StdioServer) else "start"
        argv = list(command) + ([server.url] if isinstance(server, HttpServer) else [])
        for source, value in argv_secrets(argv)[1].items():
            if value not in allow:
                add(source.replace("argv.", f"{section}.", 1), value, server_name, (*base, section), "it is a secret argument")
    # Every interpolated variable, wherever it is used (a tool argument too), by its own name.
    for loc, variables in used.items():
        for var, var_value in variables.items():
            reason = secret_reason(var, var_value, marked=var in marked_env, allow=allow)
            if reason and f"env.{var}" not in secrets:
                add(f"env.{var}", var_value, str(loc[1]) if len(loc) > 1 else "", loc, reason)

    own_names = [s.name for s in config.sessions] + list(config.servers) + [config.golden_dir, Path(display).name]
    for name in own_text_secrets(secrets, extra=own_names, allow=allow):
        loc, reason = where[name]
        raise ConfigError(
            f"{display}:{line_for(lines, loc)}: {field_name(loc)}: {name} is a secret ({reason}), but its "
            "value also occurs in mcptape's own text (a JSON key, an MCP method name, a word of the reports, "
            "or a session, server or golden_dir name), so it cannot be scrubbed without rewriting every tape "
            "and report",
            hint="if the value is not a secret, list it under redact.allow; if it is, give it a real secret "
            "value (or rename the session or server it matches)",
        )
    return secrets


def _auth_secrets(name: str, server: HttpServer, used: Mapping[Loc, dict[str, str]], display: str,
                  lines: Mapping[Loc, int], add: Any) -> None:
    """`auth:`'s client secret or private key: a secret by where it goes, and only from the environment
    (mcptape.yml is committed). Tokens are learned at run time (transports/oauth.py), not here."""
    auth = server.auth
    assert auth is not None
    for field in ("client_secret", "private_key"):
        value = getattr(auth, field)
        if value is None:
            continue
        loc: Loc = ("servers", name, "auth", field)
        if not used.get(loc):
            raise ConfigError(
                f"{display}:{line_for(lines, loc)}: {field_name(loc)}: the {field.replace('_', ' ')} is written in "
                "mcptape.yml, and mcptape.yml is committed",
                hint=f"export it and write `{field}: ${{MCP_{field.upper()}}}`",
            )
        add(f"auth.{field}", value, name, loc, f"it is the OAuth {field.replace('_', ' ')}")


def _check_marks(config: Config, used: Mapping[Loc, dict[str, str]], display: str, lines: Mapping[Loc, int]) -> None:
    """`redact.env`/`redact.headers` name something the config has: a typo must not leave a secret unmarked."""
    env_names = {k for server in config.servers.values() for k in server.env}
    env_names |= {var for variables in used.values() for var in variables}
    header_names = {
        k.lower(): k for server in config.servers.values() if isinstance(server, HttpServer) for k in server.headers
    }
    for i, name in enumerate(config.redact.env):
        if name not in env_names:
            choices = sorted(env_names)
            raise ConfigError(
                f"{display}:{line_for(lines, ('redact', 'env', i))}: redact.env[{i}]: \"{name}\" is neither a "
                f"key of a server's env: nor a ${{VAR}} this config uses{suggest(name, choices)} "
                + (f"Variables: {', '.join(choices)}" if choices else "This config has no variables")
            )
    for i, name in enumerate(config.redact.headers):
        if name.lower() not in header_names:
            choices = sorted(header_names.values())
            raise ConfigError(
                f"{display}:{line_for(lines, ('redact', 'headers', i))}: redact.headers[{i}]: \"{name}\" is not a "
                f"header of any server{suggest(name, choices)} "
                + (f"Headers: {', '.join(choices)}" if choices else "No server has headers:")
            )


# pydantic error type -> what was expected, for type errors.


def refuse_url_credentials(url: str, option: str = "--url") -> None:
    """Raise ConfigError if `url` holds a literal credential (a `user:PASSWORD@`, a secret query
    parameter such as `?access_token=`, a random-looking part): `init` writes the URL into the
    mcptape.yml it tells you to commit. A `${VAR}` in its place is what to write instead.
    """
    _, found = argv_secrets([url])
    literal = [v for v in found.values() if "${" not in v]
    if not literal:
        return
    what = "a password (user:PASSWORD@)" if any(k.startswith("argv.url-password") for k in found) else "a credential"
    raise ConfigError(
        f"{option}: the URL holds {what}, and mcptape.yml is committed",
        hint=f"write it as a variable and export it: {option} 'http://user:${{MCP_PASSWORD}}@host/mcp' "
        f"(or ?access_token=${{MCP_TOKEN}}), or send it in a header: --header 'Authorization: Bearer ${{TOKEN}}'",
    )
