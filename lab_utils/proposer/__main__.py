"""Command line: run proposer studies, check their registries, record human approvals.

    python -m lab_utils.proposer campaign --campaigns 3 --iterations 4 --budget-usd 0.50 \
        --output DIR [--live]
    python -m lab_utils.proposer compare --output DIR [--evaluations N] [--seeds 20] [--live]
    python -m lab_utils.proposer verify DIR
    python -m lab_utils.proposer approve DIR --campaign 1 --candidate agent-03 \
        --reviewer NAME [--decline] [--note TEXT]

Offline (stored answers) unless --live, which means LAB_LIVE=1 for the model layer: it then
needs ANTHROPIC_API_KEY and is capped by LAB_MAX_USD as well as by --budget-usd.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import anthropic

from lab_utils import llm

from .campaign import OutputExists, Study, run_study
from .compare import compare
from .prompt import Attempt
from .registry import approve, verify

LESSON_ITERATIONS = 4  # decisions per campaign in lesson 06, whose answers replay offline


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive whole number (got {text})")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lab_utils.proposer", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("campaign", "run independent LLM campaigns"),
                       ("compare", "the LLM campaigns and search baselines at a matched budget")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--output", type=Path, required=True,
                       help="a new folder (never overwritten)")
        p.add_argument("--budget-usd", type=float, default=0.50,
                       help="model spending limit for the whole study")
        p.add_argument("--live", action="store_true",
                       help="call the model (LAB_LIVE=1) instead of replaying stored answers")
    campaign = sub.choices["campaign"]
    campaign.add_argument("--campaigns", type=_positive, default=3)
    campaign.add_argument("--iterations", type=_positive, default=LESSON_ITERATIONS, help="decisions per campaign")
    comp = sub.choices["compare"]
    comp.add_argument("--evaluations", type=_positive,
                      help="evaluations per proposer (default: as many as the LLM used)")
    comp.add_argument("--seeds", type=_positive, default=20, help="random-search runs")
    check = sub.add_parser("verify", help="recompute a registry's hash chain")
    check.add_argument("folder", type=Path)
    ok = sub.add_parser("approve", help="record a human decision on an evaluated candidate")
    ok.add_argument("folder", type=Path)
    ok.add_argument("--campaign", required=True, help="campaign number (or a search run's label)")
    ok.add_argument("--candidate", required=True)
    ok.add_argument("--reviewer", required=True)
    ok.add_argument("--decline", action="store_true", help="record a refusal instead")
    ok.add_argument("--note", default="")
    return parser


def _registry(folder: Path) -> Path:
    path = folder / "registry.jsonl" if folder.is_dir() else folder
    if not path.is_file():
        raise FileNotFoundError(f"no registry at {path}")
    return path


def _step(attempt: Attempt) -> str:
    if attempt.rejection is not None:
        return "rejected"
    return f"{attempt.candidate_id} {attempt.totals['passed']}/{attempt.totals['total']}"


def _campaign_summary(study: Study) -> str:
    lines = [llm.describe_mode()]
    for c in study.campaigns:
        path = " -> ".join(map(_step, c.attempts)) or "no decisions"
        t = c.final.totals
        lines.append(f"campaign {c.campaign}: {path}; {c.stop_reason}; final {c.final.id} "
                     f"({t['passed']}/{t['total']}, mean stored records "
                     f"{t['mean_stored_records']:.2f})")
    cost = f"USD {study.cost_usd:.6f} of {study.budget.limit_usd:.2f}"
    spending = (f" replayed from stored answers, nothing spent; live they would cost {cost}"
                if study.mode == "replay" else f", {cost} spent")
    lines.append(f"{study.calls} model calls{spending}; {verify(study.registry)}")
    lines.append(f"wrote {study.registry}, report.md and report.json")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command in ("campaign", "compare"):
            # The model layer reads its mode from the environment: the flag decides, not the shell.
            os.environ["LAB_LIVE"] = "1" if args.live else "0"
            if args.command == "campaign":
                study = run_study(args.output, campaigns=args.campaigns, iterations=args.iterations,
                                  budget_usd=args.budget_usd)
                print(_campaign_summary(study))
            else:
                compare(args.output, evaluations=args.evaluations, seeds=args.seeds,
                        budget_usd=args.budget_usd)
                print((args.output / "compare.md").read_text(encoding="utf-8"))
                print(f"wrote {args.output / 'compare.json'}, report.md and registry.jsonl "
                      "(every attempt of every proposer)")
        elif args.command == "verify":
            result = verify(_registry(args.folder))
            print(result)
            return 0 if result.ok else 1
        else:
            campaign = int(args.campaign) if args.campaign.isdigit() else args.campaign
            line = approve(_registry(args.folder), campaign, args.candidate, args.reviewer,
                           approved=not args.decline, note=args.note)
            print(f"recorded {line['decision']} of {args.candidate} (campaign {campaign}) by "
                  f"{args.reviewer} as line {line['seq']}: {json.dumps(line['config'])}")
    except llm.NoStoredAnswer as error:
        # Its advice is for a notebook's cells; here the inputs are the command's flags.
        print(f"error: {str(error).splitlines()[0]} Offline, answers are stored only for lesson 06's runs "
              f"(--iterations {LESSON_ITERATIONS}, model {llm.DEFAULT_MODEL}): use those, or add --live "
              "(with ANTHROPIC_API_KEY set) to ask the model.", file=sys.stderr)
        return 2
    # A failure of the live model layer: its own one-line message says what to do.
    except (OutputExists, FileNotFoundError, ValueError, llm.LiveModeRefused, anthropic.AnthropicError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
