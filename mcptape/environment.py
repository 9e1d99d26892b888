"""The environment variables mcptape reads, what each does, and the one way a yes/no one is read.

Every variable mcptape itself reads is a row of VARIABLES (tests/test_environment.py fails on a
read of one that is not, and docs/environment.md is checked against the table). What is *not*
here, on purpose: the variables a user names in mcptape.yml as `${NAME}` (config/interpolate.py
reads those by the user's choice), the minimal allowlist passed on to a server's process
(transports/stdio.py's ENV_ALLOWLIST: handed on, not read), and rec's whole environment (the
server inherits it; redact/policy.py finds the secrets in it).

A yes/no variable is read by `flag` alone: unset or empty is the default, `0`, `false`, `no`,
`off` (any case, spaces around ignored) are no, anything else is yes. So `CI=1`, `CI=yes` and
`CI=true` all mean "running in CI" (`in_ci`), for `mcptape ci --update-golden` and the pytest
plugin alike. Knows nothing else about mcptape: a facts module.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# name -> what it does (docs/environment.md carries the same table for users).
VARIABLES: dict[str, str] = {
    # mcptape's own
    "MCPTAPE_DEBUG": "yes/no: an internal error prints its traceback",
    "MCPTAPE_RECORD_MODE": "the pytest plugin's record mode (none, once, new_episodes, all) when no option gives one",
    "MCPTAPE_ALLOW_RECORD_IN_CI": "yes/no: the pytest plugin records in CI too (as --mcptape-allow-record-in-ci)",
    "MCPTAPE_COMMENT": "yes/no (default yes): under GitHub Actions, post or update the PR comment",
    "MCPTAPE_COMMENT_AUTHOR": "the login whose comment carrying mcptape's marker is updated (default: the token's)",
    "MCPTAPE_GITHUB_TOKEN": "the token for the PR comment (default GITHUB_TOKEN)",
    "MCPTAPE_REPORT": "the JSON report the Action's publishing step reads",
    "MCPTAPE_FAIL_ON": "the Action's fail-on input: the drift that fails the job (output or structural)",
    "MCPTAPE_ARTIFACT": "the name of the run's artifact, linked from the summary and the comment",
    "MCPTAPE_HTML": "the HTML report's file name in the run's artifact (`ci --html`), named by the summary and the comment",
    "MCPTAPE_ACTION_REPOSITORY": "the Action's repository, for links (default GITHUB_ACTION_REPOSITORY)",
    "MCPTAPE_ACTION_REF": "the Action's ref, for links (default GITHUB_ACTION_REF)",
    "MCPTAPE_ALLOW_HOSTS": "names (comma-separated) that rec --listen and play --listen answer besides the loopback "
                           "names and the listen address, as --allow-host; `*`: any (DNS-rebinding protection off)",
    "MCPTAPE_ATTEST": "yes/no: the Action attested the artifact's fresh tapes (input attest): the comment's accept commands verify them first",
    # the CI system's
    "CI": "yes/no: running in CI (`in_ci`): `ci --update-golden` and the pytest plugin's recording are refused",
    "GITHUB_ACTIONS": "yes/no: running in a GitHub Actions job: summary, annotations, outputs, PR comment; "
                      "server and tape text is framed so it never acts as a workflow command",
    "GITHUB_BASE_REF": "the branch a pull request targets: what `ci --baseline merge-base` compares with",
    "GITHUB_EVENT_NAME": "the event that started the workflow (pull_request, workflow_run, ...)",
    "GITHUB_EVENT_PATH": "the event's JSON file: the pull request to comment on",
    "GITHUB_REPOSITORY": "owner/name of the repository, for the comment and links",
    "GITHUB_SHA": "the commit, for links",
    "GITHUB_RUN_ID": "the run, for links",
    "GITHUB_SERVER_URL": "github.com or the GitHub Enterprise server, for links",
    "GITHUB_API_URL": "the REST API the comment is posted through",
    "GITHUB_ACTION_REPOSITORY": "the Action's repository, for links",
    "GITHUB_ACTION_REF": "the Action's ref, for links",
    "GITHUB_WORKSPACE": "the checkout: paths in the summary and comment are relative to it",
    "GITHUB_STEP_SUMMARY": "the job summary file the markdown summary is appended to",
    "GITHUB_OUTPUT": "the step outputs file",
    "GITHUB_TOKEN": "the token for the PR comment when MCPTAPE_GITHUB_TOKEN is unset",
    "RUNNER_TEMP": "where the Action's temporary files go",
    # OpenTelemetry's (publish/telemetry.py; `mcptape[otel]`)
    "OTEL_SERVICE_NAME": "with --otel: the traces' service name (the OpenTelemetry SDK reads the other OTEL_* variables itself)",
    "OTEL_RESOURCE_ATTRIBUTES": "with --otel: the traces' resource attributes (key=value,...)",
    # the system's
    "HOME": "the home directory: redacted from tapes and normalized to a placeholder",
    "COLUMNS": "the terminal width when stderr is not a terminal",
}

_NO = frozenset({"0", "false", "no", "off"})


def parse_flag(text: str | None, default: bool = False) -> bool:
    """The one reading of a yes/no value: unset/empty -> default; 0/false/no/off -> no; else yes."""
    if text is None:
        return default
    word = text.strip().lower()
    if not word:
        return default
    return word not in _NO


def get(name: str, env: Mapping[str, str] | None = None, default: str | None = None) -> str | None:
    """Variable `name` of `env` (default: this process's environment); `name` must be in VARIABLES."""
    if name not in VARIABLES:
        raise KeyError(f"{name} is not an environment variable mcptape reads; add it to environment.VARIABLES")
    return (os.environ if env is None else env).get(name, default)


def flag(name: str, env: Mapping[str, str] | None = None, default: bool = False) -> bool:
    """Yes/no variable `name` read by parse_flag."""
    return parse_flag(get(name, env), default)


def in_ci(env: Mapping[str, str] | None = None) -> bool:
    """Running in CI: the one rule `mcptape ci` and the pytest plugin share (CI is yes, by parse_flag)."""
    return flag("CI", env)


def on_github_actions(env: Mapping[str, str] | None = None) -> bool:
    """Running in a GitHub Actions job (GITHUB_ACTIONS is yes, by parse_flag)."""
    return flag("GITHUB_ACTIONS", env)
