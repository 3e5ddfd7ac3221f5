"""Evaluate one configuration on scenario files or folders.

    python -m lab_utils.temporal --config '{"time_aware": true}' --scenarios scenarios --json
    python -m lab_utils.temporal --writer bitemporal --scenarios scenarios_bitemporal

CONFIG is a JSON file or inline JSON; settings it leaves out keep their baseline value.
--scenarios takes files and folders, or the names of the sets the course ships, found wherever it is installed.
--writer picks the study's writer (default, as published) or the bi-temporal one.
Bad input (unknown setting, value out of bounds, malformed scenario) exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .config import parse_config
from .evaluator import Report, evaluate
from .memory import WRITERS
from .scenarios import BITEMPORAL, BITEMPORAL_HELDOUT, HELDOUT, PUBLIC, load_scenarios

SETS = {path.name: path for path in (PUBLIC, HELDOUT, BITEMPORAL, BITEMPORAL_HELDOUT)}


def scenario_path(text: str) -> Path:
    """A file or folder as given; else a set the course ships, so a command works in any folder."""
    path = Path(text)
    if path.exists():
        return path
    if text in SETS:
        return SETS[text]
    raise argparse.ArgumentTypeError(
        f"{text}: no such file or folder, nor a scenario set the course ships ({', '.join(SETS)})")


def _show(answer: str | None) -> str:
    return "null" if answer is None else answer


def table(report: Report) -> str:
    width = max(len("scenario"), *(len(s.id) for s in report.scenarios)) + 2
    rows = [f"{'scenario':<{width}}{'role':<13}{'family':<18}{'result':<8}{'stored':<8}answers"]
    for s in report.scenarios:
        answers = ", ".join(
            _show(a) if a == e else f"{_show(a)} (expected {_show(e)})"
            for a, e in zip(s.answers, s.expected))
        broken = [name for name, held in s.hard_checks.items() if not held]
        if broken:
            answers += f"  [hard check failed: {', '.join(broken)}]"
        rows.append(f"{s.id:<{width}}{s.role:<13}{s.family:<18}{'pass' if s.passed else 'FAIL':<8}"
                    f"{s.stored_records:<8}{answers}")
    t = report.totals
    checks = ", ".join(f"{name} {c.violations} in {c.checks}" for name, c in t.checks.items())
    rows.append(f"\n{t.passed}/{t.total} passed, mean stored records {t.mean_stored_records:.2f}, "
                f"hard-check violations {t.hard_check_violations} ({checks}); writer {report.writer}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab_utils.temporal", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="{}",
                        help="JSON file or inline JSON; missing settings take the baseline")
    parser.add_argument("--scenarios", nargs="+", type=scenario_path, default=[PUBLIC], metavar="PATH",
                        help=f"scenario files or folders, or sets the course ships: {', '.join(SETS)} "
                             "(default: scenarios, the public set)")
    parser.add_argument("--writer", choices=WRITERS, default="study",
                        help="the study's writer (default) or the bi-temporal one")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    try:
        config = parse_config(args.config)
        scenarios = load_scenarios(args.scenarios)
    except ValueError as error:  # ScenarioError included
        parser.error(str(error))
    report = evaluate(config, scenarios, args.writer)
    print(json.dumps(report.to_json(), indent=2) if args.json else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
