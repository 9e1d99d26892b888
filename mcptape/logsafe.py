"""Printing untrusted text (tape content, server stderr) into a CI log without it acting there.

GitHub Actions reads any log line that starts with `::` (or the older `##[`) as a workflow
command, so a tool result saying `::add-mask::` or `::error file=...` would otherwise be
obeyed by the runner. Inside GitHub Actions such text is framed with `::stop-commands::`
and a random token that the text cannot know; elsewhere it is printed as it is.
"""

from __future__ import annotations

import os


def _could_act(text: str) -> bool:
    return "::" in text or "##[" in text


def ci_log_block(text: str) -> str:
    """`text` made inert for the runner's command parser when running in GitHub Actions."""
    if os.environ.get("GITHUB_ACTIONS") != "true" or not _could_act(text):
        return text
    import secrets  # only in a GitHub job: keeps `mcptape --version` light

    token = secrets.token_hex(16)
    body = text if text.endswith("\n") else text + "\n"
    return f"::stop-commands::{token}\n{body}::{token}::\n"
