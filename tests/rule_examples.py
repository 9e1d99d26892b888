"""One example value per rule of the rule set redact/rules.py runs, generated from the rule's own regex.

The rules are read from the library's own command (`betterleaks config show toml -c
mcptape/redact/betterleaks.toml`: the resolved set, without the generic rules), each regex that
Python can compile is walked (re._parser's tree: the regexes are RE2's, so no lookaround or
backreference) to draw a matching string from a seeded random.Random, and a draw is kept only
if the rule set itself reports that rule on it (entropy floors, allowlists and keyword filters
pass over some draws: up to DRAWS tries a rule). What it reports as the secret is the value that
must never survive.
"""

from __future__ import annotations

import functools
import importlib
import random
import re
import string
import subprocess
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcptape.redact import rules

# The parsed tree of a regex (as hypothesis's from_regex reads it too); typeshed leaves these out.
C: Any = importlib.import_module("re._constants")
sre: Any = importlib.import_module("re._parser")

DRAWS = 30
PRINTABLE = [chr(c) for c in range(33, 127)]
_CATEGORY = {
    C.CATEGORY_DIGIT: string.digits,
    C.CATEGORY_NOT_DIGIT: string.ascii_letters,
    C.CATEGORY_SPACE: " ",
    C.CATEGORY_NOT_SPACE: string.ascii_letters + string.digits,
    C.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
    C.CATEGORY_NOT_WORD: " -.:",
    C.CATEGORY_LINEBREAK: "\n",
    C.CATEGORY_NOT_LINEBREAK: string.ascii_letters + string.digits,
}


class Unsupported(Exception):
    """A regex construct the drawer does not produce (a lookaround or a backreference)."""


@dataclass(frozen=True)
class RuleExample:
    rule: str
    text: str  # the whole match drawn from the regex (keyword context included)
    secret: str  # what the rule set reports as the secret in it


@functools.cache
def resolved_rules() -> list[dict[str, Any]]:
    """The rules of the set rules.py runs, as the library resolves its config."""
    import betterleaks

    cli = Path(betterleaks.__file__).parent / "bin" / "betterleaks"
    out = subprocess.run([str(cli), "config", "show", "toml", "-c", str(rules._CONFIG)], capture_output=True,
                         check=True)
    loaded: list[dict[str, Any]] = tomllib.loads(out.stdout.decode())["rules"]
    return loaded


def _class_chars(items: list[tuple[Any, Any]]) -> list[str]:
    negate = False
    allowed: set[str] = set()
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            allowed.add(chr(av))
        elif op is C.RANGE:
            lo, hi = av
            allowed.update(chr(c) for c in range(lo, min(hi, 0x7E) + 1))
        elif op is C.CATEGORY:
            allowed.update(_CATEGORY[av])
        else:
            raise Unsupported(str(op))
    if negate:
        return [c for c in PRINTABLE if c not in allowed] or [" "]
    return sorted(allowed) or [" "]


def _draw(tree: Any, rng: random.Random, out: list[str]) -> None:
    for op, av in tree:
        if op is C.LITERAL:
            out.append(chr(av))
        elif op is C.NOT_LITERAL:
            out.append(rng.choice([c for c in string.ascii_letters + string.digits if ord(c) != av]))
        elif op is C.ANY:
            out.append(rng.choice(string.ascii_letters + string.digits))
        elif op is C.IN:
            out.append(rng.choice(_class_chars(av)))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            hi = lo + 8 if hi is C.MAXREPEAT else hi
            for _ in range(rng.randint(lo, max(lo, hi))):
                _draw(sub, rng, out)
        elif op is C.SUBPATTERN:
            _draw(av[3], rng, out)
        elif op is C.ATOMIC_GROUP:
            _draw(av, rng, out)
        elif op is C.BRANCH:
            _draw(rng.choice(av[1]), rng, out)
        elif op is C.AT:
            continue  # anchors and boundaries: the example stands alone between spaces
        else:
            raise Unsupported(str(op))


def draw(regex: str, rng: random.Random) -> str:
    out: list[str] = []
    with warnings.catch_warnings():  # RE2's nested-looking sets: "possible nested set"
        warnings.simplefilter("ignore", FutureWarning)
        tree = sre.parse(regex)
    _draw(tree, rng, out)
    return "".join(out)


def rule_examples(seed: int) -> tuple[list[RuleExample], int, int]:
    """(examples, rules with a regex Python compiles, rules in the set): one example per rule the
    rule set reports on some draw."""
    scan = rules._scan_string()
    all_rules = resolved_rules()
    examples = []
    compiled = 0
    for rule in all_rules:
        regex = rule.get("regex") or ""
        try:
            with warnings.catch_warnings():  # as in draw
                warnings.simplefilter("ignore", FutureWarning)
                rx = re.compile(regex) if regex else None
        except re.error:
            rx = None
        if rx is None:
            continue
        compiled += 1
        rng = random.Random(f"{seed}:{rule['id']}")
        for _ in range(DRAWS):
            try:
                text = draw(regex, rng)
            except Unsupported:
                break
            if not rx.search(text) or "\0" in text:
                continue
            found = [f for f in scan(f" {text} ") if str(f.rule_id) == rule["id"]]
            secret = found[0].match.value or found[0].match.full if found else ""
            if secret:
                examples.append(RuleExample(rule["id"], text, secret))
                break
    return examples, compiled, len(all_rules)
