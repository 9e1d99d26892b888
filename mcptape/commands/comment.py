"""`mcptape comment --body FILE [--pr N] [--repo owner/name]`: post or update the sticky PR comment.

The second stage of the fork-PR pattern (docs/github-action.md): a `workflow_run` job with a
write token posts what an untrusted run saved. A JSON report is re-rendered here (all of
markdown.py's escaping applied again); a saved markdown body is checked to carry exactly one
valid marker. Either goes through the outlet before it is posted. GitHub itself is publish/github.py's.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from mcptape.errors import GitHubError
from mcptape.publish.github import (
    DEFAULT_API_URL,
    CommentClient,
    comment_key,
    format_outputs,
    pull_request_from_event,
    render_context,
    upsert_comment,
)
from mcptape.publish.outlet import Outlet
from mcptape.report.json_report import read_report
from mcptape.report.markdown import render_comment
from mcptape.report.md_safe import MARKER_RE, comment_marker


def _load_body(path: str, key: str | None, workspace: str) -> tuple[str, str, bool]:
    """(marker, body, drifted) from a JSON report (re-rendered here, safely) or a saved markdown body.

    A JSON report is the safe input for the fork pattern: it comes from an untrusted run, and
    re-rendering it applies all of markdown.py's escaping here. A markdown body is posted as is,
    so it must come from a trusted run; it is still checked to carry exactly one valid marker.
    """
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise GitHubError(f"{path}: cannot read the comment body: {e}", hint="pass the file a ci run saved") from e
    if raw.lstrip().startswith("{"):
        hint = "use the file `mcptape ci --json` wrote"
        report, _ = read_report(path, hint)
        try:
            marker = comment_marker(key or comment_key(report.config, workspace))
            # --marker is the config's repository path (the report holds only its file name): links use it.
            context = render_context(os.environ, key or report.config, workspace)
            body = render_comment(report, marker, context=context)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            # Fields of the wrong type deep inside (the report comes from an untrusted run).
            raise GitHubError(f"{path}: not a valid mcptape JSON report: {type(e).__name__}: {e}", hint=hint) from e
        return marker, body, report.exit_code != 0
    first = raw.split("\n", 1)[0].strip()
    if not MARKER_RE.match(first):
        raise GitHubError(
            f"{path}:1: the body does not start with an mcptape marker",
            hint="post a body saved by `mcptape ci` (the comment-body output) or its JSON report",
        )
    if key is not None and first != comment_marker(key):
        raise GitHubError(f"{path}:1: marker {first} does not match --marker {key}")
    if raw.count("<!-- mcptape:") != 1:
        raise GitHubError(f"{path}: the body carries more than one mcptape marker; refusing to post it")
    parts = raw.split("\n\n", 2)
    green = len(parts) > 1 and parts[1].startswith("### mcptape: ✅")  # render_comment's clean headline
    return first, raw, not green


@dataclass(frozen=True)
class Options:
    body: str
    pr: int | None
    repo: str | None
    head_sha: str | None
    marker: str | None  # --marker KEY (once --key, which sign uses for the SSH key)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(body=args.body, pr=args.pr, repo=args.repo, head_sha=args.head_sha, marker=args.marker)


def run(options: Options) -> int:
    """`mcptape comment --body FILE [--pr N] [--repo owner/name]`: post or update the sticky comment.

    The second stage of the fork-PR pattern (a `workflow_run` job with a write token). With
    `--head-sha` the PR's current head must be that commit, so an artifact from an untrusted run
    cannot aim the comment at another PR.
    """
    env = os.environ
    workspace = env.get("GITHUB_WORKSPACE") or os.getcwd()
    marker, body, drifted = _load_body(options.body, options.marker, workspace)
    outlet = Outlet.for_config(None)
    body = outlet.document(body, "PR comment")
    number = options.pr
    repo = options.repo or env.get("GITHUB_REPOSITORY", "")
    if number is None:
        pr = pull_request_from_event(env)
        if pr is None:
            raise GitHubError("no pull request: this event is not a pull_request", hint="pass --pr N")
        number, repo = pr.number, options.repo or pr.repo
    token = env.get("MCPTAPE_GITHUB_TOKEN") or env.get("GITHUB_TOKEN")
    if not token:
        raise GitHubError("no GitHub token", hint="set GITHUB_TOKEN (e.g. env: GITHUB_TOKEN: ${{ github.token }})")
    client = CommentClient(repo, token, env.get("GITHUB_API_URL") or DEFAULT_API_URL)
    try:
        head_sha = options.head_sha
        if head_sha and client.pull_head_sha(number) != head_sha:
            raise GitHubError(
                f"PR #{number} is not at commit {head_sha}; refusing to comment",
                hint="take --pr and --head-sha from the same run (github.event.workflow_run.head_sha)",
            )
        action, url = upsert_comment(
            client, number, marker, body, create=drifted, login_override=env.get("MCPTAPE_COMMENT_AUTHOR")
        )
    except GitHubError as e:
        if e.status in (401, 403, 404) and not e.hint:
            e.hint = "the token cannot write to the PR: give the job `permissions: pull-requests: write`"
        raise
    finally:
        client.close()
    print(f"mcptape comment: {action} {url}".rstrip(), file=sys.stderr)
    if env.get("GITHUB_OUTPUT"):
        outlet.append(env["GITHUB_OUTPUT"], format_outputs({"comment-url": url}), what="step outputs")
    return 0


