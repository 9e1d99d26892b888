"""GitHub: the only module that knows GitHub — job summary, annotations, step outputs, PR comment.

`publish_run` is called by `mcptape ci` and `merge` at the end of a run when GITHUB_ACTIONS=true,
with the run's outlet (outlet.py), through which every byte it writes, prints or posts leaves;
`mcptape comment` (commands/comment.py), the second stage of the fork-PR pattern
(docs/github-action.md), posts with CommentClient and upsert_comment. What the summary and the
comment *say* is report/markdown.py's; the verdict is ci/'s and diff/'s.

Publishing never changes the verdict: a comment that cannot be posted (fork PR, read-only token,
GitHub down) is a `::warning::` plus a saved body, and the job's exit code stays the gate's.
Only a secret surviving redaction stops it (SecretLeak, exit 4) — and then nothing is written.

The PR comment is sticky: exactly one per config, found by its hidden first-line marker AND by
being written by this token's own user, so a comment someone else pastes the marker into is never
taken over. When drift goes away the existing comment is turned green; a PR that never drifted
gets no comment at all (no noise on clean PRs).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcptape.environment as environment
from mcptape.errors import GitHubError, WriteError
from mcptape.publish.outlet import Outlet
from mcptape.report.markdown import (
    DEFAULT_ACTION_REF,
    DEFAULT_ACTION_REPOSITORY,
    Context,
    render_comment,
    render_summary,
)
from mcptape.report.md_safe import comment_marker, one_line
from mcptape.verdict.model import RunReport, SessionResult

DEFAULT_API_URL = "https://api.github.com"
# The login GitHub gives comments made with a workflow's GITHUB_TOKEN; such a token cannot call
# GET /user (403 "Resource not accessible by integration"), so this is the fallback identity.
ACTIONS_BOT = "github-actions[bot]"
MAX_ANNOTATIONS = 10  # GitHub shows at most 10 error annotations per step
# The exit code from which each `fail-on` input fails the job (action.yml's run step says the same).
FAIL_ON_THRESHOLD = {"output": 1, "structural": 2, "never": 3}
PER_PAGE = 100


# --- workflow commands and files -----------------------------------------------------------------


def escape_data(value: str) -> str:
    """Escape the message part of a workflow command (`::error ...::<data>`)."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """Escape a property value of a workflow command (`file=`, `title=`): also `:` and `,`."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **props: str | int | None) -> str:
    """One workflow command line, e.g. `::error file=tapes/a.tape.jsonl,line=7::...`."""
    ps = ",".join(f"{k}={escape_property(str(v))}" for k, v in props.items() if v is not None)
    return f"::{name}{' ' + ps if ps else ''}::{escape_data(message)}"


def format_outputs(outputs: Mapping[str, str]) -> str:
    """`$GITHUB_OUTPUT` text: `name=value`, or the heredoc form with a random delimiter when multiline."""
    parts = []
    for name, value in outputs.items():
        if "\n" in value or "\r" in value:
            delim = f"ghadelimiter_{uuid.uuid4().hex}"
            while delim in value:  # practically never; a value chosen to contain it must not end it early
                delim = f"ghadelimiter_{uuid.uuid4().hex}"
            parts.append(f"{name}<<{delim}\n{value}\n{delim}\n")
        else:
            parts.append(f"{name}={value}\n")
    return "".join(parts)


# --- where we are ---------------------------------------------------------------------------------


@dataclass
class PullRequest:
    number: int
    repo: str  # owner/name of the base repository, where the comment goes
    fork: bool  # head repository differs from the base (the token of a `pull_request` run is read-only)
    event: str
    head_sha: str = ""  # the PR's head commit (GITHUB_SHA of a pull_request run is a merge commit)


def pull_request_from_event(env: Mapping[str, str]) -> PullRequest | None:
    """The PR of this run from GITHUB_EVENT_PATH; None when the event is not about a PR."""
    event_name = env.get("GITHUB_EVENT_NAME", "")
    path = env.get("GITHUB_EVENT_PATH")
    if event_name not in ("pull_request", "pull_request_target") or not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            event = json.load(fh)
    except (OSError, ValueError, RecursionError) as e:
        raise GitHubError(f"{path}: cannot read the GitHub event file: {e}") from e
    pr = event.get("pull_request") or {}
    number = pr.get("number") or event.get("number")
    if not isinstance(number, int):
        return None
    base = ((pr.get("base") or {}).get("repo") or {}).get("full_name") or env.get("GITHUB_REPOSITORY", "")
    head = ((pr.get("head") or {}).get("repo") or {}).get("full_name")
    # A deleted fork has head.repo null; treat it as a fork: its token is read-only too.
    fork = event_name == "pull_request" and head != base
    head_sha = str((pr.get("head") or {}).get("sha") or "")
    return PullRequest(number=number, repo=str(base), fork=fork, event=event_name, head_sha=head_sha)


def comment_key(config_path: str, workspace: str | None = None) -> str:
    """The marker key of a config: its path relative to the workspace, so two configs get two comments."""
    root = Path(workspace or os.getcwd()).resolve()
    path = Path(config_path)
    full = (path if path.is_absolute() else Path.cwd() / path).resolve()
    try:
        return full.relative_to(root).as_posix()
    except ValueError:
        return full.name


def _workflow_run(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The run a `workflow_run` event is about (the one that wrote the report), if this is one."""
    path = env.get("GITHUB_EVENT_PATH")
    if env.get("GITHUB_EVENT_NAME") != "workflow_run" or not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            event = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None  # links are a courtesy: without the event the comment just has none
    run = event.get("workflow_run") if isinstance(event, dict) else None
    return run if isinstance(run, dict) else None


def render_context(env: Mapping[str, str], config_path: str, workspace: str) -> Context:
    """Where this run's summary and comment are shown: the config's repository path, where ci ran,
    the head commit and the run (for links), the action's repository and ref (the install line)
    and the artifact the action uploads (MCPTAPE_ARTIFACT, set by action.yml)."""
    root = Path(workspace).resolve()
    cwd = Path.cwd().resolve()
    config = Path(config_path)
    full = (config if config.is_absolute() else cwd / config).resolve()
    try:
        run_dir = cwd.relative_to(root).as_posix()
        in_repo = True
    except ValueError:
        run_dir, in_repo = "", False
    try:
        config_arg = Path(os.path.relpath(full, cwd)).as_posix()
    except ValueError:  # another drive (Windows)
        config_arg = full.as_posix()
    try:
        pr = pull_request_from_event(env)
    except GitHubError:
        pr = None  # publish_run reports an unreadable event file where it needs it
    sha = (pr.head_sha if pr is not None and pr.head_sha else "") or env.get("GITHUB_SHA", "")
    run_id = env.get("GITHUB_RUN_ID", "")
    producer = _workflow_run(env)
    if producer is not None:  # `mcptape comment` in a workflow_run job: the report is the other run's
        sha = str(producer.get("head_sha") or "")
        run_id = str(producer.get("id") or "")
    server = (env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
    repo = env.get("GITHUB_REPOSITORY", "")
    base = f"{server}/{repo}" if re.fullmatch(r"[\w.-]+/[\w.-]+", repo) else None
    # Inside a composite action GITHUB_ACTION_REPOSITORY can be empty; action.yml passes them on.
    action_repo = env.get("MCPTAPE_ACTION_REPOSITORY") or env.get("GITHUB_ACTION_REPOSITORY") or ""
    action_ref = env.get("MCPTAPE_ACTION_REF") or env.get("GITHUB_ACTION_REF") or ""
    if not (action_repo and action_ref):  # a local `uses: ./` has neither: the documented release
        action_repo, action_ref = DEFAULT_ACTION_REPOSITORY, DEFAULT_ACTION_REF
    good_sha = bool(re.fullmatch(r"[0-9a-f]{4,64}", sha))
    return Context(
        config_path=comment_key(config_path, workspace) if in_repo else None,
        run_dir="" if run_dir == "." else run_dir,
        config_arg=config_arg,
        blob_base=f"{base}/blob/{sha}" if base and good_sha and in_repo else None,
        commit=sha if good_sha else None,
        commit_url=f"{base}/commit/{sha}" if base and good_sha else None,
        run_url=f"{base}/actions/runs/{run_id}" if base and run_id.isdigit() else None,
        action_repository=action_repo,
        action_ref=action_ref,
        artifact=env.get("MCPTAPE_ARTIFACT") or None,
        html_report=env.get("MCPTAPE_HTML") or None,
        # action.yml attests the artifact's tapes (input attest): the accept commands verify them.
        attested_repo=repo if environment.flag("MCPTAPE_ATTEST", env) and env.get("MCPTAPE_ARTIFACT") and base else None,
    )


def _golden_for_annotation(s: SessionResult, config_path: str, workspace: str) -> str | None:
    if not s.golden:
        return None
    base = Path(config_path).resolve().parent
    golden = (base / s.golden).resolve()
    try:
        return golden.relative_to(Path(workspace).resolve()).as_posix()
    except ValueError:
        return None  # outside the checkout: GitHub could not place it on the Files tab anyway


def annotation_lines(report: RunReport, *, config_path: str, workspace: str, fail_on: str = "output") -> list[str]:
    """One annotation per drifted session at its first drifted event, one per failed session:
    `error` where the job fails for it, `warning` for drift that `fail_on` lets pass."""
    threshold = FAIL_ON_THRESHOLD.get(fail_on, 1)
    lines = []
    for s in report.sessions:
        head = s.diff.first if s.diff is not None else None
        if s.verdict in ("output", "structural") and head is not None:
            kind = "structural drift" if s.verdict == "structural" else "output drift"
            lines.append(
                command(
                    "error" if s.exit_code >= threshold else "warning",
                    one_line(head.one_line(s.name), 1000),
                    file=_golden_for_annotation(s, config_path, workspace),
                    line=s.first_golden_line(),
                    title=f"mcptape: {kind} in {s.name}",
                )
            )
        elif s.verdict in ("error", "secret"):
            what = "a secret survived redaction" if s.verdict == "secret" else "could not run"
            lines.append(command("error", one_line(s.error or what, 1000), title=f"mcptape: {s.name} {what}"))
    if len(lines) > MAX_ANNOTATIONS:
        extra = len(lines) - MAX_ANNOTATIONS + 1
        level = "error" if report.exit_code >= threshold else "warning"
        lines = lines[: MAX_ANNOTATIONS - 1] + [command(level, f"{extra} more sessions drifted or failed; see the job summary")]
    return lines


def run_outputs(report: RunReport, *, report_path: str | None) -> dict[str, str]:
    first = report.first_drift()
    drifted = [s.name for s in report.sessions if s.verdict in ("output", "structural")]
    return {
        "result": report.result,
        "exit-code": str(report.exit_code),
        "first-drift": one_line(first[1].one_line(first[0].name), 1000) if first else "",
        "drifted-sessions": "\n".join(drifted),
        "report": report_path or "",
    }


# --- the PR comment -------------------------------------------------------------------------------


def _api_error_status(e: BaseException) -> int | None:
    status = getattr(e, "status_code", None)
    return status if isinstance(status, int) else None


class CommentClient:
    """The three issue-comment calls and GET /user, over ghapi, with errors translated here."""

    def __init__(self, repo: str, token: str, api_url: str) -> None:
        from ghapi.core import GhApi

        owner, _, name = repo.partition("/")
        if not owner or not name:
            raise GitHubError(f"repository {repo!r} is not owner/name", hint="set GITHUB_REPOSITORY or pass --repo")
        self.api = GhApi(owner, name, token=token, gh_host=api_url.rstrip("/"), sync=True, timeout=30.0)  # type: ignore[no-untyped-call]
        # ghapi opens a new HTTP client (and TLS context) per request unless given one: keep one.
        import httpx2

        self._http = httpx2.Client(timeout=30.0, follow_redirects=True)
        self.api.transport.client = self._http

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> CommentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from fasttransport.errors import APIError

        try:
            return fn(*args, **kwargs)
        except APIError as e:
            status = _api_error_status(e)
            message = getattr(e, "message", "") or type(e).__name__
            raise GitHubError(
                f"GitHub API: {what} failed" + (f" with HTTP {status}" if status else "") + f": {message}", status=status
            ) from e

    def own_login(self, override: str | None = None) -> str:
        """Who our comments are written by: GET /user, or the Actions bot for a GITHUB_TOKEN."""
        if override:
            return override
        try:
            user = self._call("GET /user", self.api.users.get_authenticated)
        except GitHubError as e:
            if e.status in (401, 403, 404):
                return ACTIONS_BOT
            raise
        login = user.get("login") if hasattr(user, "get") else None
        return str(login) if login else ACTIONS_BOT

    def list_comments(self, number: int) -> list[Any]:
        """All comments of the PR, following pagination to the end (Link rel="next")."""
        from ghapi.page import parse_link_hdr

        out: list[Any] = []
        page = 1
        while True:
            batch = self._call(
                f"GET issues/{number}/comments page {page}",
                self.api.issues.list_comments,
                issue_number=number,
                per_page=PER_PAGE,
                page=page,
            )
            batch = list(batch or [])
            out.extend(batch)
            link = self.api.recv_hdrs.get("Link") or self.api.recv_hdrs.get("link") or ""
            # Follow rel="next" as GitHub sends it; without a Link header a full page means "maybe more".
            links = parse_link_hdr(link) if link else None  # type: ignore[no-untyped-call]
            has_next = "next" in links if links is not None else len(batch) == PER_PAGE
            if not batch or not has_next or page >= 1000:
                return out
            page += 1

    def create(self, number: int, body: str) -> Any:
        return self._call(f"POST issues/{number}/comments", self.api.issues.create_comment, issue_number=number, body=body)

    def pull_head_sha(self, number: int) -> str:
        pr = self._call(f"GET pulls/{number}", self.api.pulls.get, pull_number=number)
        return str(((pr.get("head") or {}).get("sha")) or "")

    def update(self, comment_id: int, body: str) -> Any:
        return self._call(f"PATCH issues/comments/{comment_id}", self.api.issues.update_comment, comment_id=comment_id, body=body)

    def delete(self, comment_id: int) -> None:
        """Delete a comment; one already gone (another run deleted it) is not an error."""
        try:
            self._call(f"DELETE issues/comments/{comment_id}", self.api.issues.delete_comment, comment_id=comment_id)
        except GitHubError as e:
            if e.status != 404:
                raise


def own_comments(comments: list[Any], marker: str, login: str) -> list[Any]:
    """Comments that start with our marker and were written by us, oldest first; others are never ours."""
    ours = []
    for c in comments:
        body = str(c.get("body") or "")
        author = str((c.get("user") or {}).get("login") or "")
        if body.split("\n", 1)[0].strip() == marker and author.lower() == login.lower():
            ours.append(c)
    return sorted(ours, key=lambda c: int(c.get("id") or 0))


def find_own_comment(comments: list[Any], marker: str, login: str) -> Any | None:
    """The oldest comment that starts with our marker and was written by us: the sticky one."""
    ours = own_comments(comments, marker, login)
    return ours[0] if ours else None


def upsert_comment(
    client: CommentClient, number: int, marker: str, body: str, *, create: bool, login_override: str | None = None
) -> tuple[str, str]:
    """Update our comment in place or create it; returns (action, html_url). `create=False` only updates.

    Runs on one PR race (a push while the last run is still going): two that list before either
    creates would both create. So after creating, list again: every racer keeps the oldest of our
    comments (ids grow with creation, so each sees the same oldest) and deletes the newer ones,
    its own included, leaving exactly one. Duplicates an earlier race left are removed the same way.
    """
    login = client.own_login(login_override)
    ours = own_comments(client.list_comments(number), marker, login)
    if ours:
        keep, newer = ours[0], ours[1:]
        for dup in newer:
            client.delete(int(dup["id"]))
        if str(keep.get("body") or "") == body:
            return "unchanged", str(keep.get("html_url") or "")
        res = client.update(int(keep["id"]), body)
        return "updated", str(res.get("html_url") or keep.get("html_url") or "")
    if not create:
        return "skipped", ""
    created = client.create(number, body)
    ours = own_comments(client.list_comments(number), marker, login)
    keep = ours[0] if ours else created
    for dup in ours[1:]:
        client.delete(int(dup["id"]))
    if int(keep["id"]) != int(created["id"]):
        # Another run's comment is older: ours was deleted above; that one carries our body now.
        res = client.update(int(keep["id"]), body)
        return "updated", str(res.get("html_url") or keep.get("html_url") or "")
    return "created", str(created.get("html_url") or "")


def _save_body(body: str, key: str, env: Mapping[str, str], outlet: Outlet) -> str:
    """The comment body saved for a later `mcptape comment` (forks, no token): through the outlet."""
    directory = env.get("RUNNER_TEMP") or tempfile.gettempdir()
    path = Path(directory) / f"mcptape-comment-{re.sub(r'[^A-Za-z0-9._-]', '_', key)}.md"
    try:
        outlet.write(path, body, what="PR comment body")
    except WriteError as e:
        raise GitHubError(f"cannot save the PR comment body: {e}") from e
    return str(path)


@dataclass
class Publication:
    """What a run posts to GitHub, rendered and verified (prepare_run), not yet posted (post)."""

    report: RunReport
    env: Mapping[str, str]
    outlet: Outlet
    key: str
    marker: str
    summary: str
    body: str
    notes: list[str]
    outputs: dict[str, str]


def secret_sentence(report: RunReport) -> str:
    """The one thing a run that exited 4 posts: which sessions a secret survived in, and that
    nothing of them was written (their names are the config's; the secret is named nowhere)."""
    names = ", ".join(f"`{one_line(s.name, 100)}`" for s in report.sessions if s.verdict == "secret")
    where = f" in session{'s' if ',' in names else ''} {names}" if names else ""
    return (f"a secret survived redaction{where} (exit 4): nothing of it was written, and nothing else of this run "
            "is posted; run `mcptape ci` where the server runs to see where (the message names the place and "
            "the kind, never the value)")


def prepare_run(
    report: RunReport,
    *,
    config_path: str,
    outlet: Outlet,
    report_path: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Publication:
    """Render and verify everything a ci run posts to GitHub Actions (SecretLeak: nothing of it is
    posted); `post` then writes and posts it. A run that exited 4 posts one verified sentence
    (`secret_sentence`) as its summary, comment and annotation, and no drift detail."""
    env = os.environ if env is None else env
    workspace = env.get("GITHUB_WORKSPACE") or os.getcwd()
    report_path = report_path or env.get("MCPTAPE_REPORT") or None
    key = comment_key(config_path, workspace)
    marker = comment_marker(key)
    outputs = run_outputs(report, report_path=report_path)
    if report.result == "secret":
        sentence = secret_sentence(report)
        summary = outlet.document(f"### mcptape: 🔒 a secret survived redaction\n\n{sentence}\n", "job summary")
        body = outlet.document(f"{marker}\n### mcptape: 🔒 a secret survived redaction\n\n{sentence}\n", "PR comment")
        notes = [outlet.verified(command("error", sentence, title="mcptape: a secret survived redaction"),
                                 "workflow annotations")]
        outputs["first-drift"] = outputs["drifted-sessions"] = ""
        return Publication(report, env, outlet, key, marker, summary, body, notes, outputs)
    context = render_context(env, config_path, workspace)
    summary = outlet.document(render_summary(report, context=context) + "\n", "job summary")
    body = outlet.document(render_comment(report, marker, context=context), "PR comment")
    notes = annotation_lines(report, config_path=config_path, workspace=workspace,
                             fail_on=env.get("MCPTAPE_FAIL_ON", "output"))
    from_tapes = "\n".join([*notes, outputs["first-drift"], outputs["drifted-sessions"]])
    if outlet.document(from_tapes, "workflow annotations and outputs") != from_tapes:
        # Something needed scrubbing: re-derive both from the scrubbed text rather than risk a leak.
        notes = [command("error", "drift details withheld: they contained a secret; see the job summary")] if notes else []
        outputs["first-drift"] = "(withheld: contained a secret)" if outputs["first-drift"] else ""
    return Publication(report, env, outlet, key, marker, summary, body, notes, outputs)


def post(publication: Publication) -> dict[str, str]:
    """Write and post what prepare_run made: the saved comment body, the job summary, the
    annotations, the PR comment and the step outputs; returns the outputs (plus `comment`: what
    happened to the comment)."""
    report, env, outlet, outputs = publication.report, publication.env, publication.outlet, publication.outputs
    body = publication.body
    body_path = _save_body(body, publication.key, env, outlet)
    outputs["comment-body"] = body_path
    if env.get("GITHUB_STEP_SUMMARY"):
        outlet.append(env["GITHUB_STEP_SUMMARY"], publication.summary, what="job summary")
    for line in publication.notes:
        outlet.command(line, "workflow annotations")

    comment_url, action = "", "skipped"
    pr = pull_request_from_event(env)
    if not environment.flag("MCPTAPE_COMMENT", env, default=True):
        action = "disabled"
    elif report.shard:
        action = "skipped: shard"
        outlet.command(command("notice", "PR comment skipped for a shard; post it after `mcptape merge` with `mcptape comment`"),
                       "workflow notice")
    elif pr is None:
        action = "skipped: not a pull request"
    elif pr.fork:
        action = "skipped: fork"
        outlet.command(
            command(
                "warning",
                f"PR comment not posted: a pull_request run from a fork has a read-only token. The body was saved to "
                f"{body_path}; post it from a workflow_run job (docs/github-action.md).",
                title="mcptape",
            ),
            "workflow warning",
            own=(body_path,),
        )
    else:
        token = env.get("MCPTAPE_GITHUB_TOKEN") or env.get("GITHUB_TOKEN") or ""
        if not token:
            action = "skipped: no token"
            outlet.command(command("warning", f"PR comment not posted: no github-token. Body saved to {body_path}.",
                                   title="mcptape"), "workflow warning", own=(body_path,))
        else:
            drifted_or_failed = report.exit_code != 0
            try:
                with CommentClient(pr.repo, token, env.get("GITHUB_API_URL") or DEFAULT_API_URL) as client:
                    action, comment_url = upsert_comment(
                        client, pr.number, publication.marker, body, create=drifted_or_failed,
                        login_override=env.get("MCPTAPE_COMMENT_AUTHOR"),
                    )
            except GitHubError as e:
                action = "failed"
                why = (
                    "the token may not write to this PR (give the job `permissions: pull-requests: write`)"
                    if e.status in (401, 403, 404)
                    else "GitHub did not accept it"
                )
                outlet.command(command("warning", f"PR comment not posted: {e.message}; {why}. Body saved to {body_path}.",
                                       title="mcptape"), "workflow warning", own=(body_path,))
    outputs["comment-url"] = comment_url
    if env.get("GITHUB_OUTPUT"):
        # `report` and `comment-body` are the runner's own paths (RUNNER_TEMP), which the
        # home-directory detector would flag: the rest of the text is checked around them.
        outlet.append(env["GITHUB_OUTPUT"], format_outputs(outputs), what="step outputs",
                      own=tuple(p for p in (outputs.get("report", ""), body_path) if p))
    return {**outputs, "comment": action}


def publish_run(
    report: RunReport,
    *,
    config_path: str,
    outlet: Outlet,
    report_path: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Publish a ci run to GitHub Actions (prepare_run, then post); returns the step outputs it
    wrote (plus `comment`: what happened). Everything leaves through `outlet`, the run's (the same
    Redactor that scrubbed the report), rendered and verified before anything is written or
    posted, so a SecretLeak leaves no summary, output or comment behind."""
    return post(prepare_run(report, config_path=config_path, outlet=outlet, report_path=report_path, env=env))


__all__ = [
    "GitHubError",
    "annotation_lines",
    "command",
    "comment_key",
    "escape_data",
    "escape_property",
    "format_outputs",
    "Publication",
    "post",
    "prepare_run",
    "publish_run",
    "pull_request_from_event",
    "render_context",
    "upsert_comment",
]
