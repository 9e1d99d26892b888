"""mcptape's own text: the words tapes and reports hold whatever a server said; no known secret may be one."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from mcptape.redact.shapes import ALWAYS_NAMES, ENTROPY_NAMES, SHAPES
from mcptape.verdict.vocabulary import DRIFT_TABLE, SEVERITY_EXIT, VERDICT_EXIT

# mcptape's own text: what tapes and reports hold whatever the server said. A known secret found in
# it would be scrubbed out of the tape's structure (every `"result"` key) and flagged in reports
# that are only verified, so such a value is refused by the config (config/secrets.py says where) and is
# never used as a known secret (`_ignorable_known`). Words are compared case-insensitively, and a
# value is refused when it is *part* of one (`struct` of `structural`): known values are found
# anywhere in the text. tests/integration/test_redact_e2e.py runs ci through every drift variant
# and fails on a word it writes that is missing here. (A JSON path the reports compose from keys,
# `error.message`, is not a word of its own: a secret equal to one still fails verification.)
_OWN_TEXT = {
    "JSON-RPC": "jsonrpc method params result error code message data",
    "MCP methods (2024-11-05 to 2026-07-28)": """initialize ping tools/list tools/call resources/list resources/read
        resources/templates/list resources/subscribe resources/unsubscribe prompts/list prompts/get
        completion/complete logging/setLevel sampling/createMessage elicitation/create roots/list server/discover
        subscriptions/listen tasks/get tasks/list tasks/result tasks/cancel tasks/update ref/prompt ref/resource
        notifications/initialized notifications/cancelled notifications/progress notifications/message
        notifications/resources/updated notifications/resources/list_changed notifications/tools/list_changed
        notifications/prompts/list_changed notifications/roots/list_changed notifications/elicitation/complete
        notifications/tasks/status notifications/tasks notifications/subscriptions/acknowledged""",
    "MCP keys": """_meta io.modelcontextprotocol/protocolVersion io.modelcontextprotocol/clientCapabilities
        io.modelcontextprotocol/clientInfo io.modelcontextprotocol/serverInfo io.modelcontextprotocol/logLevel
        io.modelcontextprotocol/subscriptionId protocolVersion capabilities clientInfo serverInfo instructions
        experimental extensions logging sampling elicitation elicitations completions listChanged subscribe
        supported supportedVersions requiredCapabilities tools prompts resources resourceTemplates
        resourceSubscriptions toolsListChanged promptsListChanged resourcesListChanged content contents
        structuredContent isError inputSchema outputSchema annotations readOnlyHint destructiveHint idempotentHint
        openWorldHint execution taskSupport description title version websiteUrl icons uriTemplate mimeType text
        image audio resource resource_link blob arguments argument messages role assistant user nextCursor cursor
        progressToken progress total level logger completion values hasMore reason requestId requestState
        inputRequests inputResponses resultType cacheScope ttlMs status statusMessage taskId createdAt
        lastUpdatedAt lastModified pollInterval pollIntervalMs io.modelcontextprotocol/tasks metadata modelPreferences systemPrompt includeContext temperature
        maxTokens stopSequences stopReason toolChoice toolUseId requestedSchema action context audience priority
        costPriority speedPriority intelligencePriority cancel create application/json text/event-stream""",
    "JSON Schema": """$schema $ref $defs type object string number integer boolean array null properties
        required items enum const default format pattern minimum maximum exclusiveMinimum exclusiveMaximum
        minLength maxLength minItems maxItems uniqueItems additionalProperties patternProperties anyOf oneOf allOf
        definitions examples enumNames""",
    "tape format (tape/)": """mcptape tape end seal format events crc32 sha256 lines name transport server command protocol
        negotiation kind dir c2s s2c msg raw bytes detail what request response notification stderr garbage note
        exit signal returncode side_effect http stdio streamable-http event_withheld dropped dropped_bytes
        overflow partial_bytes interrupted recorder_error server_exited stderr_dropped .tape.jsonl timing unit
        .tape.timing.json""",
    "JSON report (verdict/model.py)": """mcptape_report config sessions session verdict exit_code drifts
        findings category severity path before after golden_line fresh_line call step orphans updated_golden
        shard redactions duration_s surface diff golden fresh notes worst_exit compared comparison surface_facts
        golden_size listed called strength headline context_cost golden_total not_called""",
    "JUnit (report/junit.py)": """testsuites testsuite testcase failure failures errors skipped classname
        system-out time tests output_drift structural_drift secret_leak could_not_run encoding""",
    "terminal and markdown reports (report/)": """verdict first drifted call error no drift redaction redacted
        value values survived nothing written --update-golden --session --junit --json --summary --out-dir
        mcptape.yml accept accepted accepts commit committing review reviewed intended change changes
        re-recording tool tools prompt prompts surface details Added Removed Breaking Compatible Cosmetic Later
        calls findings finding golden tape tapes fresh live run keeps left untouched complete completed
        conformance message(s) anyway fails until conforms record recorded recording answer answered garbage
        non-json non-utf-8 unknown holding longer milliseconds middle cannot character characters difference
        property optional explain transport report terminal summary comment sticky marker could not timeout
        timed crashed started failed start ready listen notify request""",
    "the comment's and summary's words (report/markdown.py)": """affects clients existing working requires returns
        returned without unchanged Per-session detail repository re-record install github secrets artifact
        download workflow mcptape-artifact delete section sections Coverage""",
    "review views (tape/view.py)": """review view generated .tape.view.txt""",
    "gate strength (strength/)": """strength mcptape_strength score killed survived survivors mutant mutants
        measured design min_strength""",
}  # fmt: skip


def _drift_words() -> set[str]:
    """The verdict's own words: verdicts, severities, and every name, meaning and phrase of the drift
    table (verdict/vocabulary.py), which reports write whatever the server said."""
    words = set(VERDICT_EXIT) | set(SEVERITY_EXIT) | {"none"}
    for row in DRIFT_TABLE.values():
        words |= {row.category, row.kind}
        for text in (row.meaning, *row.phrases):
            words |= {w.strip("`()[],.:;") for w in re.sub(r"\{\w+\}", " ", text).split()}
    return {w for w in words if w}


@functools.lru_cache(maxsize=1)
def _own_words() -> tuple[str, ...]:
    kinds = {s.kind for s in SHAPES} | {n.replace("_", "-") for n in ALWAYS_NAMES + ENTROPY_NAMES}
    kinds |= {"private-key", "cookie", "pattern", "home", "user", "redacted", "aws-secret-key", "secret"}
    own = {w for words in _OWN_TEXT.values() for w in words.split()} | _drift_words()
    return tuple(sorted({w.lower() for w in own} | kinds))


def own_text(value: str, extra: Iterable[str] = ()) -> bool:
    """Whether a value is, or is part of, a word of mcptape's own text (or of `extra`: the config's
    session and server names, golden_dir), which no known secret may be (see _OWN_TEXT)."""
    v = value.strip().lower()
    if not v:
        return False
    return any(v in w for w in _own_words()) or any(v in str(w).lower() for w in extra)


