"""The Action's own overhead: from the first step of action.yml to a verdict on the bundled example.

    python bench/bench_action.py [--rounds 3] [--cold]

Runs action.yml's own steps (tests/action_runner.py: bash as the runner runs them, a real install
from the package registry) on a copy of fixtures/example and splits the time into
  install   the install step: a fresh venv and mcptape's pinned dependencies (uv, or pip), or
            nothing when the environment is restored from the cache
  restore   the cache restore (here a local copy standing in for actions/cache; the real one
            downloads an archive of the size printed)
  start-up  what `mcptape ci` imports before it starts a server (the action's venv, measured
            as `import mcptape.commands.ci` minus `python -c pass`)
  gate      the `mcptape ci` step: start-up, the sessions, the diff, the reports
against the floor: the same sessions' servers driven by a bare JSON-RPC client (spawn, initialize,
the steps, close; sessions in parallel as `ci` runs them), which is what any gate must pay.

Every way is measured in the same run, in turn, `--rounds` times, medians reported:
  pip warm / uv warm     a fresh venv each round, the package caches kept (a cached runner image)
  cache hit              the environment restored from the Actions cache: no install at all
  pip cold / uv cold     (--cold) empty package caches: every wheel downloaded
The overhead is everything but the floor: (install + restore + gate) - floor.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ROOT  # noqa: E402
from tests.action_runner import ActionRunner, action_checkout, example_workspace  # noqa: E402

EXAMPLE = ROOT / "fixtures" / "example"
INPUTS = {"working-directory": "fixtures/example", "comment": "false", "upload-artifact": "false"}


def one_job(base: Path, name: str, inputs: dict[str, str], env: dict[str, str], store: Path | None = None,
            keep_temp: Path | None = None) -> dict[str, Any]:
    """One job from the first step to the verdict; its figures in seconds."""
    runner_temp = keep_temp or base / name
    runner_temp.mkdir(parents=True, exist_ok=True)
    runner = ActionRunner(runner_temp, None, action_dir=action_checkout(runner_temp), cache_store=store)
    ws = example_workspace(base / f"{name}-ws")
    started = time.perf_counter()
    run = runner.run(ws, {**INPUTS, **inputs}, env=env)
    total = time.perf_counter() - started
    if run.result != "success" or run.outputs.get("exit-code") != "0":
        raise RuntimeError(f"{name}: the action did not reach a clean verdict:\n{run.log[-3000:]}")
    steps = {s.id: s.seconds for s in run.steps}
    venv = Path(run.step("key").outputs["venv"])
    return {
        "total": total,
        "install": steps["install"],
        "gate": steps["run"],
        "other_steps": sum(steps.values()) - steps["install"] - steps["run"],
        "restore": total - sum(steps.values()),  # the emulated cache steps and the runner's own work
        "installed_with": run.step("install").outputs["installed-with"],
        "venv": venv,
    }


def startup(venv: Path, rounds: int = 5) -> float:
    """Seconds `mcptape ci` spends importing before its first server: import minus bare start."""
    python = str(venv / "bin" / "python")

    def timed(code: str) -> float:
        t0 = time.perf_counter()
        subprocess.run([python, "-c", code], check=True)
        return time.perf_counter() - t0

    pairs = [(timed("import mcptape.commands.ci, mcptape.ci.session"), timed("pass")) for _ in range(rounds)]
    return statistics.median(a - b for a, b in pairs)


def floor(config: Path = EXAMPLE / "mcptape.yml") -> float:
    """The bundled example's sessions against their server with a bare JSON-RPC client, in parallel."""
    import yaml

    spec = yaml.safe_load(config.read_text(encoding="utf-8"))
    server = spec["servers"]["calc"]["command"]
    sessions = spec["sessions"]

    def requests(steps: list[Any]) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = []
        for step in steps:
            if isinstance(step, str):
                out.append(({"list_tools": "tools/list", "list_resources": "resources/list",
                             "list_prompts": "prompts/list", "ping": "ping"}[step], {}))
            elif "call" in step:
                out.append(("tools/call", {"name": step["call"], "arguments": step.get("arguments", {})}))
            elif "read_resource" in step:
                out.append(("resources/read", {"uri": step["read_resource"]}))
            elif "get_prompt" in step:
                out.append(("prompts/get", {"name": step["get_prompt"], "arguments": step.get("arguments", {})}))
        return out

    def drive(steps: list[Any]) -> None:
        proc = subprocess.Popen([sys.executable if server[0].startswith("python") else server[0], *server[1:]],
                                cwd=config.parent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        stdin, stdout = proc.stdin, proc.stdout
        assert stdin is not None and stdout is not None

        def call(ident: int, method: str, params: dict[str, Any]) -> None:
            stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}) + "\n")
            stdin.flush()
            while json.loads(stdout.readline()).get("id") != ident:
                pass

        call(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "floor", "version": "0"}})
        stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        for ident, (method, params) in enumerate(requests(steps), 1):
            call(ident, method, params)
        stdin.close()
        proc.wait(30)

    started = time.perf_counter()
    threads = [threading.Thread(target=drive, args=(s["steps"],)) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def run(rounds: int = 3, cold: bool = False) -> dict[str, Any]:
    figures: dict[str, list[dict[str, Any]]] = {}
    floors: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-action-") as tmp:
        base = Path(tmp)
        warm_caches = {"PIP_CACHE_DIR": str(base / "pip-cache"), "UV_CACHE_DIR": str(base / "uv-cache")}
        store = base / "actions-cache"
        # Prime the package caches and the Actions cache once, outside the counted rounds.
        one_job(base, "prime-uv", {}, warm_caches, store)
        one_job(base, "prime-pip", {"installer": "pip", "cache": "false"}, warm_caches)
        hit_temp = base / "prime-uv"
        ways: dict[str, tuple[dict[str, str], dict[str, str]]] = {
            "uv warm": ({"cache": "false"}, warm_caches),
            "pip warm": ({"installer": "pip", "cache": "false"}, warm_caches),
        }
        for index in range(rounds):
            for way, (inputs, env) in ways.items():
                figures.setdefault(way, []).append(one_job(base / f"r{index}", way.replace(" ", "-"), inputs, env))
            # A cache hit: the same RUNNER_TEMP path as the job that saved, emptied (a new machine).
            for child in hit_temp.iterdir():
                if child.name.startswith("mcptape-venv-"):
                    shutil.rmtree(child)
            figures.setdefault("cache hit", []).append(one_job(base / f"r{index}", "hit", {}, warm_caches, store,
                                                               keep_temp=hit_temp))
            if cold:
                for way, inputs in (("uv cold", {"cache": "false"}), ("pip cold", {"installer": "pip", "cache": "false"})):
                    empty = {"PIP_CACHE_DIR": str(base / f"r{index}-{way}-pip"), "UV_CACHE_DIR": str(base / f"r{index}-{way}-uv")}
                    figures.setdefault(way, []).append(one_job(base / f"r{index}", way.replace(" ", "-"), inputs, empty))
            floors.append(floor())
        venv = figures["cache hit"][-1]["venv"]
        start = startup(venv)
        venv_mb = sum(p.stat().st_size for p in venv.rglob("*") if p.is_file()) / 1e6
    floor_s = statistics.median(floors)
    out: dict[str, Any] = {"floor_s": floor_s, "startup_s": start, "venv_mb": venv_mb, "rounds": rounds, "ways": {}}
    for way, runs in figures.items():
        med = {k: statistics.median(r[k] for r in runs) for k in ("total", "install", "restore", "gate")}
        overhead = med["install"] + med["restore"] + med["gate"] - floor_s
        out["ways"][way] = {**med, "overhead": overhead, "overhead_over_floor": overhead / floor_s,
                            "installed_with": runs[-1]["installed_with"]}
    warm = out["ways"]
    out["uv_over_pip_warm_install"] = warm["uv warm"]["install"] / warm["pip warm"]["install"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="also with empty package caches (downloads every wheel)")
    args = parser.parse_args()
    result = run(args.rounds, args.cold)
    print(f"floor (the servers alone): {result['floor_s'] * 1000:.0f} ms; start-up imports of `ci`: "
          f"{result['startup_s'] * 1000:.0f} ms; the installed environment: {result['venv_mb']:.0f} MB")
    print(f"{'way':<10} {'first step→verdict':>19} {'install':>8} {'restore':>8} {'gate':>6} {'overhead':>9} {'÷ floor':>8}")
    for way, f in result["ways"].items():
        print(f"{way:<10} {f['total']:>18.2f}s {f['install']:>7.2f}s {f['restore']:>7.2f}s {f['gate']:>5.2f}s "
              f"{f['overhead']:>8.2f}s {f['overhead_over_floor']:>7.1f}×")
    print(f"uv/pip warm install: {result['uv_over_pip_warm_install']:.2f}×")
    print(json.dumps({k: v for k, v in result.items() if k != "ways"} | {"ways": {
        w: {k: v for k, v in f.items()} for w, f in result["ways"].items()}}, default=str))


if __name__ == "__main__":
    main()
