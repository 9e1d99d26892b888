"""The README runs as written, from a fresh clone, and reads the same off the repository (PyPI).

Its shell blocks are read the way a newcomer reads them: each block starts at the clone's root,
`cd` moves, a file a command writes (`--out`, `--json`, `> file`) exists for the commands after
it. Every repository path they mention must exist in a fresh clone, every `mcptape` subcommand
must be one `mcptape --help` lists, every `make` target one the Makefile has. The blocks that use
only `mcptape` (and `cd`) are then run for real in a clean copy of the checkout: none may fail to
run, and output the README quotes under a command (a `#   ` comment line) must be what it prints.
Its links must be absolute, because PyPI shows the README without the repository around it.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.checkout import checkout_files, clean_copy
from tests.conftest import ROOT, mcptape_command, user_env

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
BLOB = "https://github.com/mcptape/action/blob/main/"
TREE = "https://github.com/mcptape/action/tree/main/"
TIMEOUT = 120
# mcptape is not on PyPI yet, so `pip install mcptape` fails for every reader. When it is published,
# set this to True (and the docs may say `pip install mcptape` again).
ON_PYPI = False

SHELL = ("sh", "bash", "shell", "console")
# Options whose value is a file or directory the command writes (mcptape's, and pytest's --junitxml).
WRITES = ("--out", "-o", "--json", "--junit", "--summary", "--sarif", "--out-dir", "--junitxml", "--html")
# mcptape's report options take their file only as `--json=FILE`: the word after a bare one is an argument.
REPORTS = ("--json", "--junit", "--summary", "--sarif", "--html")
# A word is taken for a path when it has a slash or one of these endings (`TAPE`, `2/4` aside).
PATH_SUFFIXES = (".py", ".yml", ".yaml", ".json", ".jsonl", ".md", ".toml", ".txt", ".xml")
OPERATORS = ("|", "||", "&&", ";", "&")
REDIRECTS = ("<", ">", ">>")


@dataclass
class Block:
    lang: str
    body: str
    line: int  # of the opening fence


@dataclass
class Command:
    words: list[str]
    line: int
    text: str  # the logical line it comes from, for messages
    expected: list[str] = field(default_factory=list)  # output the README quotes under it


def fenced_blocks(text: str) -> list[Block]:
    blocks, lang, start, body = [], None, 0, []  # type: ignore[var-annotated]
    for number, line in enumerate(text.splitlines(), 1):
        fence = re.match(r"\s*```(\S*)\s*$", line)
        if lang is None and fence:
            lang, start, body = fence.group(1), number, []
        elif lang is not None and fence and not fence.group(1):
            blocks.append(Block(lang, "\n".join(body), start))
            lang = None
        elif lang is not None:
            body.append(line)
    assert lang is None, f"the code block opened on line {start} is never closed"
    return blocks


def commands(block: Block) -> list[Command]:
    """The simple commands of a shell block, continuation lines joined, comments dropped."""
    found: list[Command] = []
    logical, first = "", 0
    for number, line in enumerate(block.body.splitlines(), block.line + 1):
        if not logical:
            first = number
        if line.endswith("\\"):
            logical += line[:-1] + " "
            continue
        logical += line
        quoted = re.match(r"\s*#   (.*)", logical)
        if quoted and found:
            found[-1].expected.append(quoted.group(1))
        else:
            lexer = shlex.shlex(logical, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            words: list[str] = []
            for word in [*lexer, ";"]:
                if word in OPERATORS:
                    if words:
                        found.append(Command(words, first, logical.strip()))
                    words = []
                else:
                    words.append(word)
        logical = ""
    return found


def without_assignments(words: list[str]) -> list[str]:
    while words and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    return words


def looks_like_path(word: str) -> bool:
    if word.startswith(("-", "@", "$", "~")) or "://" in word or "$" in word or word.startswith("git+"):
        return False
    return word == "." or "/" in word or word.endswith(PATH_SUFFIXES)


def cli_subcommands() -> set[str]:
    """The subcommands `mcptape --help` lists (its usage `{a,b}` or its indented list), as a user sees them."""
    proc = subprocess.run(mcptape_command("--help"), capture_output=True, text=True, timeout=TIMEOUT,
                          env=user_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    names = {n for group in re.findall(r"\{([a-z,-]+)\}", proc.stdout) for n in group.split(",")}
    names |= set(re.findall(r"^ {4}([a-z][a-z-]*)(?:\s{2,}|$)", proc.stdout, re.MULTILINE))
    return names


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    heads = re.findall(r"^([A-Za-z0-9_.-][A-Za-z0-9_. -]*?)\s*:(?!=)", text, re.MULTILINE)
    return {t for head in heads for t in head.split() if not t.startswith(".")}


def here(path: str, cwd: str) -> str:
    """`path` as seen from `cwd`, both relative to the clone's root."""
    return posixpath.normpath(posixpath.join(cwd, path))


def command_problems(text: str, where: str, existing: set[str], subcommands: set[str],
                     targets: set[str]) -> list[str]:
    """What in the shell blocks of `text` would not work from a fresh clone holding `existing`."""
    problems = []
    for block in fenced_blocks(text):
        if block.lang not in SHELL:
            continue
        cwd, written = ".", set[str]()
        for command in commands(block):
            words = without_assignments(command.words)
            say = f"{where}:{command.line}: `{command.text}`:"
            if not words:
                continue
            if words[0] == "cd":
                target = here(words[1], cwd)
                if target not in existing:
                    problems.append(f"{say} no directory {target}")
                cwd = target
                continue
            if words[0] == "make":
                problems += [f"{say} the Makefile has no target {t!r}" for t in words[1:]
                             if not t.startswith("-") and "=" not in t and t not in targets]
            options = [w for w in words[1:] if not w.startswith("-")]
            if words[0] == "mcptape" and options and options[0] not in subcommands:
                problems.append(f"{say} mcptape has no subcommand {options[0]!r} (mcptape --help lists "
                                f"{', '.join(sorted(subcommands))})")
            if (words[0] == "mcptape" and options[:1] == ["ci"] and not {"-c", "--config"} & set(words)
                    and here("mcptape.yml", cwd) not in existing | written):
                problems.append(f"{say} mcptape ci reads mcptape.yml, which {cwd} does not have")
            if words[0] == "mcptape" and options[:1] == ["init"] and not {"-o", "--out"} & set(words):
                written.add(here("mcptape.yml", cwd))  # init's default file
            if words[0] == "mcptape" and options[:1] == ["ci"] and {"-u", "--update-golden"} & set(words):
                written.add(here("tapes", cwd))  # the golden_dir init writes (and the example's)
            outputs = {i + 1 for i, w in enumerate(words)
                       if (w in WRITES and not (words[0] == "mcptape" and w in REPORTS)) or w in (">", ">>")}
            for i, word in enumerate(words[1:], 1):
                flag, _, value = word.partition("=")
                if flag in WRITES and value:
                    written.add(here(value, cwd))
                    continue
                if i in outputs:
                    written.add(here(word, cwd))
                    continue
                if word in REDIRECTS or not looks_like_path(word):
                    continue
                path = here(word, cwd)
                made = path in written or any(w.startswith(path.rstrip("/") + "/") for w in written)
                if path not in existing and not made:
                    problems.append(f"{say} {word} does not exist in a fresh clone (from {cwd})")
    return problems


def link_problems(text: str, where: str, existing: set[str]) -> list[str]:
    """Links that break off the repository: relative ones, and repository links to files that do not exist."""
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    targets = re.findall(r"\]\(([^)\s]+)\)", prose) + re.findall(r"^\[[^\]]+\]:\s*(\S+)", prose, re.MULTILINE)
    targets += re.findall(r"""(?:href|src)=["']([^"']+)""", prose)
    problems = []
    for target in targets:
        if not re.match(r"(https?://|mailto:)", target):
            problems.append(f"{where}: link {target!r} is relative: it breaks on PyPI (use {BLOB}...)")
        elif target.startswith((BLOB, TREE)):
            path = target.split("/main/", 1)[1].split("#")[0].rstrip("/")
            if path not in existing:
                problems.append(f"{where}: link {target!r}: {path} is not in the repository")
    return problems


def pypi_install_problems(text: str, where: str) -> list[str]:
    """`pip install mcptape` (a name on PyPI) in a code block, while the package is not published there."""
    problems = []
    for block in fenced_blocks(text):
        for line in block.body.splitlines():
            _, found, rest = line.partition("pip install")
            if not found:
                continue
            words = shlex.split(rest, comments=True)
            if [w for w in words if re.fullmatch(r"mcptape(\[[^\]]*\])?([<>=!~]=?\S*)?", w)]:
                problems.append(f"{where}: `{line.strip()}`: mcptape is not on PyPI yet; install from "
                                "the repository (git+https://github.com/mcptape/action@v1) or a clone (.)")
    return problems


@pytest.fixture(scope="module")
def existing() -> set[str]:
    """Every file and directory of a fresh clone, relative to its root."""
    files = checkout_files()
    return {".", *files, *(str(parent) for f in files for parent in Path(f).parents if str(parent) != ".")}


@pytest.fixture(scope="module")
def subcommands() -> set[str]:
    names = cli_subcommands()
    assert {"rec", "play", "diff", "ci"} <= names  # the help was read
    return names


def test_the_readme_commands_refer_to_what_a_fresh_clone_has(existing: set[str], subcommands: set[str]) -> None:
    text = README.read_text(encoding="utf-8")
    assert len([b for b in fenced_blocks(text) if b.lang in SHELL]) >= 4
    assert command_problems(text, "README.md", existing, subcommands, make_targets()) == []


def test_every_code_block_names_its_language_so_no_command_block_escapes() -> None:
    for doc in [README, *DOCS]:
        unnamed = [b.line for b in fenced_blocks(doc.read_text(encoding="utf-8")) if not b.lang]
        assert unnamed == [], f"{doc.name}: code blocks without a language on lines {unnamed}"


def test_yaml_and_json_blocks_parse() -> None:
    """What a reader pastes into mcptape.yml, a workflow or a client's config must at least load."""
    checked = 0
    for doc in [README, *DOCS]:
        for block in fenced_blocks(doc.read_text(encoding="utf-8")):
            try:
                if block.lang in ("yaml", "yml"):
                    yaml.safe_load(block.body)
                elif block.lang == "json":
                    json.loads(block.body)
                else:
                    continue
            except (yaml.YAMLError, json.JSONDecodeError) as e:
                pytest.fail(f"{doc.name}:{block.line}: the {block.lang} block does not parse: {e}")
            checked += 1
    assert checked >= 5


def test_the_readme_links_work_off_the_repository(existing: set[str]) -> None:
    text = README.read_text(encoding="utf-8")
    assert BLOB + "docs/performance.md" in text
    assert link_problems(text, "README.md", existing) == []


@pytest.mark.skipif(ON_PYPI, reason="mcptape is on PyPI: pip install mcptape works")
def test_every_install_instruction_works_before_the_package_is_on_pypi() -> None:
    problems = [p for doc in [README, *DOCS] for p in pypi_install_problems(doc.read_text(encoding="utf-8"),
                                                                             doc.name)]
    assert problems == []


def test_the_checks_catch_what_the_old_readme_had(existing: set[str], subcommands: set[str]) -> None:
    """The controls, each a line the README had or could have: a missing script, a made-up
    subcommand, a placeholder path, ci without a config, a missing make target, a relative link,
    an install from PyPI."""
    old = (
        "```sh\n"
        "mcptape rec --out tapes/calc.tape.jsonl -- python servers/calc.py\n"
        "mcptape play tapes/calc.tape.jsonl\n"  # written by the line before: fine
        "mcptape diff tapes/calc.tape.jsonl tapes/calc-new.tape.jsonl\n"
        "mcptape record -- python3 fixtures/servers/calc_server.py\n"
        "mcptape ls tapes/\n"  # a directory the first line wrote into: fine
        "mcptape ci --update-golden      # review `git diff tapes/` and commit\n"
        "make demo && make tests\n"
        "```\n"
        "See [docs/sharding.md](docs/sharding.md) and [the action](" + BLOB + "docs/no-such.md).\n"
        "```sh\n"
        "pip install mcptape  # published?\n"
        "python -m pip install 'mcptape[dev]>=0.1'\n"
        "python -m pip install \"git+https://github.com/mcptape/action@v1\"\n"
        "```\n"
    )
    found = command_problems(old, "old", existing, subcommands, make_targets())
    assert found == [
        "old:2: `mcptape rec --out tapes/calc.tape.jsonl -- python servers/calc.py`: servers/calc.py does not "
        "exist in a fresh clone (from .)",
        "old:4: `mcptape diff tapes/calc.tape.jsonl tapes/calc-new.tape.jsonl`: tapes/calc-new.tape.jsonl does not "
        "exist in a fresh clone (from .)",
        "old:5: `mcptape record -- python3 fixtures/servers/calc_server.py`: mcptape has no subcommand 'record' "
        f"(mcptape --help lists {', '.join(sorted(subcommands))})",
        "old:7: `mcptape ci --update-golden      # review `git diff tapes/` and commit`: mcptape ci reads "
        "mcptape.yml, which . does not have",
        "old:8: `make demo && make tests`: the Makefile has no target 'tests'",
    ]
    assert link_problems(old, "old", existing) == [
        "old: link 'docs/sharding.md' is relative: it breaks on PyPI (use " + BLOB + "...)",
        "old: link '" + BLOB + "docs/no-such.md': docs/no-such.md is not in the repository",
    ]
    assert [p.split("`")[1] for p in pypi_install_problems(old, "old")] == [
        "pip install mcptape  # published?", "python -m pip install 'mcptape[dev]>=0.1'"]


def test_the_readme_blocks_of_mcptape_commands_run_as_written(tmp_path: Path) -> None:
    """Run in a clean copy of the checkout with mcptape (this one) on PATH, as a newcomer's shell."""
    clone = clean_copy(tmp_path / "clone")
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "mcptape").exists(), "the dev install puts mcptape next to python"
    env = user_env(PATH=os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]))
    env.pop("MCPTAPE_FIXTURE_VARIANT", None)
    ran = []
    for block in fenced_blocks(README.read_text(encoding="utf-8")):
        cmds = commands(block) if block.lang in SHELL else []
        if not cmds or any(without_assignments(c.words)[:1] not in (["mcptape"], ["cd"]) for c in cmds):
            continue
        cwd, done = clone, set()
        for command in cmds:
            if command.text in done:  # `a && b` is one line: run it once
                continue
            done.add(command.text)
            words = without_assignments(command.words)
            if words[0] == "cd":
                cwd = cwd / words[1]
                continue
            proc = subprocess.run(["bash", "-c", command.text], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=TIMEOUT)
            said = f"README.md:{command.line}: `{command.text}` exited {proc.returncode}\n{proc.stdout}{proc.stderr}"
            # 1 and 2 are verdicts (drift), not failures to run; 3 and 4 and a traceback are.
            assert proc.returncode in (0, 1, 2) and "Traceback" not in proc.stderr, said
            for line in command.expected:
                assert line.strip() in proc.stdout, f"{said}\nthe README says it prints: {line.strip()}"
            ran.append((words[1], proc.returncode))
    assert ("rec", 0) in ran and ("play", 0) in ran and ("diff", 1) in ran and ("ci", 0) in ran, ran
    assert ("init", 0) in ran and ("check", 0) in ran, ran


def test_init_writes_the_config_ci_then_reads_and_ci_update_writes_the_tapes(existing: set[str],
                                                                              subcommands: set[str]) -> None:
    block = (
        "```sh\n"
        "mcptape init -- python3 fixtures/servers/notes_server.py\n"
        "mcptape ci --update-golden\n"  # reads the mcptape.yml init wrote
        "git add mcptape.yml tapes/\n"  # the tapes ci -u wrote
        "```\n"
        "```sh\n"
        "mcptape init -o other.yml -- python3 fixtures/servers/notes_server.py\n"
        "mcptape ci\n"  # init wrote other.yml: there is no mcptape.yml
        "git add tapes/\n"  # and no ci -u wrote tapes/
        "```\n"
    )
    assert command_problems(block, "new", existing, subcommands, make_targets()) == [
        "new:8: `mcptape ci`: mcptape ci reads mcptape.yml, which . does not have",
        "new:9: `git add tapes/`: tapes/ does not exist in a fresh clone (from .)",
    ]
