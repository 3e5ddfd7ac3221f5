"""report.json and report.md of a study, built from its registry (the record of truth)."""

from __future__ import annotations

import json
from typing import Any

from lab_utils.llm import MODEL

from .prompt import patch_text
from .registry import read, verify
from .study import Study

OUTCOME = {"evaluation": "evaluated", "rejected": "rejected", "stop": "stop",
           "budget_exhausted": "budget exhausted", "request_too_large": "request too large"}


def _row(line: dict[str, Any]) -> dict[str, Any]:
    result = line.get("result")
    return {"decision": line["iteration"], "outcome": OUTCOME[line["kind"]],
            "candidate": line.get("candidate_id"), "parent": line.get("parent_id"),
            "patch": line.get("patch"),
            "passed": result and f"{result['passed']}/{result['total']}",
            "mean_stored_records": result and result["mean_stored_records"],
            "selected": line.get("selected"), "cost_usd": line.get("cost_usd", 0.0),
            "note": line.get("rejection") or line.get("error") or "",
            # for the JSON reader: which exact request, and what the model said it expected
            "request_sha256": line.get("request_sha256"),
            "hypothesis": (line.get("decision") or {}).get("hypothesis"),
            "predicted_effect": (line.get("decision") or {}).get("predicted_effect")}


def summary(study: Study) -> dict[str, Any]:
    lines = read(study.registry)
    campaigns = []
    for c in study.campaigns:
        rows = [_row(line) for line in lines if line.get("campaign") == c.campaign]
        campaigns.append({
            "campaign": c.campaign, "stop_reason": c.stop_reason, "calls": c.calls,
            "cost_usd": round(c.cost_usd, 6), "evaluations": c.evaluations,
            "final": {"candidate": c.final.id, "config": c.final.config.model_dump(),
                      "totals": c.final.totals},
            "path": rows})
    return {"model": MODEL, "mode": study.mode, "budget_usd": study.budget.limit_usd,
            "spent_usd": round(study.budget.spent_usd, 6), "calls": study.calls,
            "campaigns": campaigns, "registry": str(verify(study.registry))}


def _cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    if column == "patch":
        return patch_text(value)
    if column == "mean_stored_records":
        return f"{value:.2f}"
    if column == "cost_usd":
        return f"{value:.6f}"
    if column == "selected":
        return "yes" if value else "no"
    return str(value).replace("|", "/")


def markdown(data: dict[str, Any]) -> str:
    out = ["# Proposer study", "",
           f"- model: {data['model']} ({data['mode']})",
           f"- model calls: {data['calls']}; cost USD {data['spent_usd']:.6f} of a USD "
           f"{data['budget_usd']:.2f} budget (failed calls count their full reservation)",
           f"- {data['registry']}", ""]
    columns = ["decision", "outcome", "candidate", "parent", "patch", "passed",
               "mean_stored_records", "selected", "cost_usd", "note"]
    for c in data["campaigns"]:
        final = c["final"]
        out += [f"## Campaign {c['campaign']}: {c['stop_reason'].replace('_', ' ')}", "",
                f"{c['calls']} calls, USD {c['cost_usd']:.6f}, {c['evaluations']} configurations "
                f"evaluated. Final parent: {final['candidate']} "
                f"({final['totals']['passed']}/{final['totals']['total']}, mean stored records "
                f"{final['totals']['mean_stored_records']:.2f}): "
                f"`{json.dumps(final['config'])}`", "",
                "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        out += ["| " + " | ".join(_cell(k, row[k]) for k in columns) + " |" for row in c["path"]]
        out.append("")
    out += ["A final parent is the best candidate of its campaign under the selection rule, not a "
            "deployment. Approval is a separate human record: "
            "`python -m lab_utils.proposer approve DIR --campaign N --candidate ID "
            "--reviewer NAME`."]
    return "\n".join(out) + "\n"


def write_report(study: Study) -> dict[str, Any]:
    data = summary(study)
    (study.output / "report.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    (study.output / "report.md").write_text(markdown(data), encoding="utf-8")
    return data
