"""Write data/responses/reflection.json: the hand-written answers lesson 07 replays offline.

Each answer is stored under the exact request the lesson's code sends. The script runs the
two-week simulation with a Reflector whose client, instead of the network, takes the
authored answer for that agent and cycle, stores it with the request body it received
(provenance "authored") and returns it; the Reflector then applies the answer, so the next
request carries the skills and memo this one produced. At the end the whole simulation is
replayed through `lab_utils.llm.make_client()` from a fresh folder, and must match.

One more answer, for the t-9310 run alone (data/runs/t-9310.jsonl) with an empty memo and no
skills, breaks the rule lint on purpose: the lesson shows how it is rejected.

    .venv/bin/python scripts/author_reflection_responses.py
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

import anthropic
import httpx2

from lab_utils.llm import RESPONSES_DIR, authored_message, make_client, mode, store_answer
from lab_utils.reflection import RUNS_DIR, Reflector, load_runs, simulate

FILE = RESPONSES_DIR / "reflection.json"
DEMO_AGENT = "support-en"
DEMO_AT = dt.datetime(2026, 3, 13, 12, tzinfo=dt.timezone.utc)  # the cycle after t-9310 ended


def create(name: str, description: str, *rules: str) -> dict:
    return {"action": "create_skill", "name": name, "description": description, "rules": list(rules)}


def patch(name: str, *add: str) -> dict:
    return {"action": "patch_skill", "name": name, "add_rules": list(add), "remove_rules": []}


def memo(part: str, *lines: str) -> dict:
    return {"action": "update_memo", "part": part, "lines": list(lines)}


# (agent, cycle) -> the answer, in the order the simulation asks.
ANSWERS: dict[tuple[str, str], dict] = {
    ("billing-ops", "2026-03-02 12:00"): {
        "summary": "The refund of order 5480 failed once because issue_refund got dollars (49.5); "
                   "the retry in integer cents worked.",
        "actions": [
            create("refund-amount-cents", "Issuing a refund with issue_refund",
                   "When calling issue_refund, always pass the amount as an integer number of cents "
                   "(USD 49.50 is 4950)."),
            memo("strengths_and_trips",
                 "I trip on issue_refund's argument formats: it takes integer cents, not dollars (order 5480)."),
        ]},
    ("support-en", "2026-03-02 12:00"): {
        "summary": "On t-8801 the agent blamed export permissions for C-4471's empty export; the customer "
                   "corrected it, and the cause was the status filter (kb-101).",
        "actions": [
            create("empty-export-status-filter", "A customer reports an empty or blank export file",
                   "When a customer reports an empty export, always check the export's status filter "
                   "before asking about permissions or the plan.",
                   "When the status filter excludes every row, then send the kb-101 reset steps and ask "
                   "the customer to confirm that the file has rows."),
            memo("strengths_and_trips",
                 "I trip when I guess a cause before looking at the data: on t-8801 I blamed export "
                 "permissions, and the cause was the status filter."),
            memo("playbooks",
                 "When C-4471 reports an export problem, always check the status filter first: their "
                 "weekly export has failed that way before."),
        ]},
    ("support-zh", "2026-03-03 00:00"): {
        "summary": "C-5120 asked for the March invoice; the agent issued it in USD and the customer "
                   "corrected it: their invoices are in CNY.",
        "actions": [
            create("invoice-currency-cny", "Creating or resending an invoice for C-5120",
                   "When creating an invoice for C-5120, always set the currency to CNY."),
            memo("playbooks",
                 "When a customer writes in Chinese, always answer in Chinese."),
        ]},
    ("support-zh", "2026-03-04 12:00"): {
        "summary": "“重新发送” on t-8846 asked to resend an invoice that had not arrived; it was not a "
                   "correction, and the resend worked.",
        "actions": [
            {"action": "nothing_to_save",
             "reason": "A delivery problem, not a mistake of the agent: no rule would have changed the run."},
        ]},
    ("billing-ops", "2026-03-05 12:00"): {
        "summary": "The refund of order 5512 (USD 740) failed with permission_denied although the agent "
                   "followed refund-amount-cents: refunds above USD 500 need an approval id. The rate "
                   "limits on order 5503 were the provider's.",
        "actions": [
            patch("refund-amount-cents",
                  "When a refund exceeds USD 500, then call request_approval and wait for its approval id "
                  "before calling issue_refund."),
        ]},
    ("support-en", "2026-03-06 12:00"): {
        "summary": "Twice get_subscription found no customer when called with the bare number 3302; "
                   "the second call with the C- prefix worked.",
        "actions": [
            create("customer-id-prefix", "Looking a customer up with get_subscription",
                   "When calling get_subscription, always pass the customer id with its C- prefix "
                   "(C-3302, not 3302)."),
            memo("strengths_and_trips",
                 "I trip when I guess a cause before looking at the data: on t-8801 I blamed export "
                 "permissions, and the cause was the status filter.",
                 "I trip on id formats: get_subscription needs the C- prefix (t-8850, t-8890)."),
        ]},
    ("reports", "2026-03-09 12:00"): {
        "summary": "A week of daily digests and two weekly usage reports, all done without corrections. "
                   "The failures of March 5 were timeouts, dropped connections and rate limits: the "
                   "environment's, not the agent's.",
        "actions": [
            create("weekly-report-order", "Order of work for the weekly usage report",
                   "When building the weekly usage report, always query usage, billing and tickets "
                   "before building any chart."),
            memo("strengths_and_trips",
                 "I build the weekly usage report and the daily digest end to end without corrections."),
        ]},
    ("support-zh", "2026-03-09 12:00"): {
        "summary": "C-5120 moved to quarterly billing in February; the agent issued a monthly invoice "
                   "and was corrected. Invoices from the skill were edited by hand twice.",
        "actions": [
            patch("invoice-currency-cny",
                  "When creating an invoice for C-5120, always bill the whole quarter: they pay "
                  "quarterly since February."),
            memo("playbooks",
                 "When a customer writes in Chinese, always answer in Chinese.",
                 "Before creating an invoice, always check the customer's billing cycle with "
                 "get_customer."),
        ]},
    ("support-en", "2026-03-10 12:00"): {
        "summary": "On t-9150 the customer asked for an invoice copy without naming the month; the "
                   "agent sent January's, and the customer needed February's.",
        "actions": [
            create("invoice-copy-period", "A customer asks for a copy of an invoice",
                   "When a customer asks for an invoice copy without naming the month, always ask "
                   "which billing period before sending one."),
        ]},
    ("billing-ops", "2026-03-11 12:00"): {
        "summary": "The refund of order 5550 failed once with a currency mismatch (paid in EUR); the "
                   "retry with the currency worked. The timeouts on order 5530 were the provider's.",
        "actions": [
            patch("refund-amount-cents",
                  "When an order was paid in a currency other than USD, always pass the order's "
                  "currency to issue_refund."),
            memo("strengths_and_trips",
                 "I trip on issue_refund's argument formats: integer cents, not dollars (order 5480), "
                 "and the order's currency, not USD (order 5550).",
                 "I handle plan changes and approved refunds without errors."),
        ]},
    ("reports", "2026-03-13 00:00"): {
        "summary": "The board report covered March 5 to 12 for \"last week\"; the user meant the last "
                   "full week, Monday March 2 to Sunday March 8.",
        "actions": [
            create("report-date-range", "Choosing the date range of a report",
                   "When a report request says \"last week\", always use the last full Monday-to-Sunday "
                   "week."),
        ]},
}

# Descriptions, not instructions: the lint rejects both, and nothing is written.
LINT_DEMO = {
    "summary": "The customer's export was empty for the third time.",
    "actions": [
        create("export-issues", "Export problems",
               "The agent sometimes asks customers about filters too often; be more careful with "
               "repeat export issues."),
        memo("playbooks", "The customer seems to prefer that we remember their earlier tickets."),
    ]}


class AuthoringClient:
    """An anthropic client whose transport stores and returns the next authored answer."""

    def __init__(self) -> None:
        self.answer: dict | None = None
        self.note = ""
        transport = httpx2.MockTransport(self._handle)
        self.client = anthropic.Anthropic(api_key="authoring-no-key", max_retries=0,
                                          http_client=httpx2.Client(transport=transport))

    def _handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        response = authored_message(body, json.dumps(self.answer, ensure_ascii=False))
        store_answer(body, response, "authored", FILE, note=self.note)
        return httpx2.Response(200, json=response)


def main() -> None:
    if mode() != "replay":
        sys.exit("Authoring works offline: unset LAB_LIVE.")
    FILE.unlink(missing_ok=True)
    runs = load_runs()
    authoring = AuthoringClient()
    with tempfile.TemporaryDirectory() as tmp:
        reflector = Reflector(authoring.client, Path(tmp) / "authoring")
        remaining = dict(ANSWERS)

        def authored(agent, new_runs, now):
            cycle = f"{now:%Y-%m-%d %H:%M}"
            if (agent, cycle) not in remaining:
                sys.exit(f"The simulation reflects {agent} at {cycle}: write an answer for it in ANSWERS.")
            authoring.answer = remaining.pop((agent, cycle))
            authoring.note = f"lesson 07, two-week simulation: {agent} at {cycle} ({len(new_runs)} new runs in the packet)"
            return reflector(agent, new_runs, now)

        authored_timeline = simulate(runs, reflect=authored)
        if remaining:
            sys.exit(f"Answers the simulation never asked for: {sorted(remaining)}")

        authoring.answer = LINT_DEMO
        authoring.note = "lesson 07, lint demo: t-9310 alone, empty memo, no skills; the rules are vague"
        demo = Reflector(authoring.client, Path(tmp) / "demo")(DEMO_AGENT, load_runs(RUNS_DIR / "t-9310.jsonl"), DEMO_AT)
        if demo.status != "rejected":
            sys.exit(f"The lint demo should be rejected, got {demo.status}")

        # The proof: the real replay client finds every answer and ends in the same state.
        replayed = simulate(runs, reflect=Reflector(make_client(), Path(tmp) / "replay"))
        if replayed != authored_timeline:
            sys.exit("Replaying the stored answers does not reproduce the authored simulation.")
    reflections = [d for d in authored_timeline if d.reflect]
    print(f"{FILE}: {len(reflections) + 1} authored answers "
          f"({len(reflections)} for the simulation, 1 lint demo).")
    for d in reflections:
        print(f"  {d.at:%m-%d %H:%M} {d.agent:12} {d.reason:9} -> {d.outcome}: {d.changes}")
    print(f"  lint demo: {demo.status}: {demo.summary()}")


if __name__ == "__main__":
    main()
