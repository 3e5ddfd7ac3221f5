"""python -m lab_utils.attacks --defense NAME --attacks PATH... [--json]

Runs one defense against the attacks in the files and folders given (default: data/attacks/) and
prints the report: as JSON with --json, otherwise as a short table. Every attack file is checked
before anything runs; a malformed one stops the run with an error naming the file and the field.
"""

from __future__ import annotations

import argparse
import json
import sys

from lab_utils.attacks.defenses import DEFENSES, defense
from lab_utils.attacks.files import ATTACKS_DIR, AttackFileError, load_attacks
from lab_utils.attacks.harness import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab_utils.attacks",
                                     description="Run one defense of the memory against attack files.")
    parser.add_argument("--defense", required=True, choices=list(DEFENSES))
    parser.add_argument("--attacks", nargs="+", default=[str(ATTACKS_DIR)], metavar="PATH",
                        help="attack files or folders of them (default: the lesson's attacks)")
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")
    args = parser.parse_args(argv)
    try:
        attacks = load_attacks(args.attacks)
    except AttackFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    report = run(defense(args.defense), attacks)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for key in ("defense", "attacks", "injection_rate", "attack_success_rate", "recall@3", "benign_refusal_rate"):
            value = report[key]
            print(f"{key:20} {value:.3f}" if isinstance(value, float) else f"{key:20} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
