"""Write data/responses/proposer.json: the stored answers lesson 06 and the CLI replay offline.

These answers are authored, not recorded: written by hand to reproduce the path the source
study published for its live campaigns, until the course records its own with LAB_LIVE=1
LAB_RECORD=1. Every campaign takes the same path, so its four requests (and answers) are the
same in all three campaigns:

  decision 1  filter_entity + time_aware   -> 19/20
  decision 2  deduplicate                  -> 19/20, mean stored records 1.70 -> 1.60
  decision 3  min_confidence 0.6           -> 20/20, 1.65
  decision 4  stop

A development run (a campaign of 5 decisions, so its requests differ) shows the rejection
path: its second answer cites the candidate id agent-01 as if it were a scenario, the
validator rejects it before anything runs, and the next request carries the error back; the
model corrects itself and the path continues as above.

The requests are the campaign's own: this script runs `run_study` with a client whose
transport answers from the script below and stores each exchange, so replay finds every
answer by the same key. Token counts are estimated from the text (about four characters a
token, plus the instructions the API adds for structured outputs).

Run from the repository root:  .venv/bin/python scripts/author_proposer_responses.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import anthropic
import httpx2

from lab_utils.llm import MODEL, RESPONSES_DIR, authored_message, cost_usd, store_answer
from lab_utils.proposer import SETTINGS, Decision, run_study

OUTPUT = RESPONSES_DIR / "proposer.json"
NOTE = ("authored by hand to reproduce the published campaign path until recorded live; "
        "not a recorded model answer; token counts are estimates")
NULL_PATCH = dict.fromkeys(SETTINGS)


def decision(observations: list[tuple[str, int, str]], hypothesis: str, effect: str,
             **patch: object) -> str:
    answer = {"observations": [{"scenario_id": s, "step": n, "seen": seen}
                               for s, n, seen in observations],
              "hypothesis": hypothesis, "predicted_effect": effect,
              "action": "propose" if patch else "stop", "patch": {**NULL_PATCH, **patch}}
    Decision.model_validate(answer)  # an authored answer must fit the form it answers
    return json.dumps(answer, ensure_ascii=False)


FILTERS = decision(
    [("entity-grounding", 3, "The home.city query kept work.city=Paris (m002) first and "
                             "answered Paris instead of Berlin."),
     ("future-move", 3, "Asked as of 2026-01-05, the reader answered Paris from m002, valid only "
                        "from 2026-01-10, while m001 Berlin was valid that day."),
     ("distractor-retrieval", 9, "top_k 3 kept three newer project cities and no primary record, "
                                 "so the answer was Bath."),
     ("selective-deletion", 6, "After account.city was deleted, the office.city record Oslo "
                               "answered the account-city question.")],
    "The reader ignores the asked entity and the as_of date. Ranking prefers newer "
    "observations, so records of another entity, or a fact not valid on the asked day, "
    "outrank the right record.",
    "filter_entity should fix entity-grounding, distractor-retrieval and selective-deletion; "
    "time_aware should fix future-move, historical-address and history-boundary. Expect about "
    "19/20 with only useful-low-confidence failing, and unchanged stored records, since both "
    "settings act on reads.",
    filter_entity=True, time_aware=True)

DEDUPE = decision(
    [("duplicate-confirmation", 2, "A second write of language=German closed m001 and stored "
                                   "m002 with the same value."),
     ("duplicate-confirmation", 3, "A third identical confirmation stored m003: three records "
                                   "for one unchanged fact."),
     ("useful-low-confidence", 1, "Portuguese at confidence 0.6 was not stored (below 0.7).")],
    "Repeated confirmations of an unchanged value are stored as new versions, so the store grows "
    "without new information. The remaining failure is a separate admission question; testing "
    "one effect at a time keeps each result interpretable.",
    "Success stays at 19/20. Mean stored records fall, because duplicate-confirmation keeps one "
    "record instead of three: about 1.70 to 1.60.",
    deduplicate=True)

THRESHOLD = decision(
    [("useful-low-confidence", 1, "language=Portuguese at confidence 0.6 abstained below "
                                  "min_confidence 0.7."),
     ("useful-low-confidence", 2, "The query then answered null; Portuguese was expected."),
     ("uncertain-conflict", 2, "delivery=courier at confidence 0.4 abstained, as the passing "
                               "scenario needs."),
     ("uncertain-timezone", 2, "timezone=Asia/Tokyo at confidence 0.25 abstained.")],
    "The 0.7 threshold rejects a useful fact given at 0.6. The uncertain writes in passing "
    "scenarios all have confidence 0.4 or lower, so 0.6 admits the useful fact and still "
    "rejects them.",
    "useful-low-confidence passes, for 20/20. Mean stored records rise slightly, to about 1.65, "
    "because one more useful fact is kept; abstention and conflict scenarios keep passing.",
    min_confidence=0.6)

STOP = decision(
    [("clean-abstention", 1, "color=orange at confidence 0.3 abstained below 0.6, as expected."),
     ("uncertain-conflict", 2, "delivery=courier at 0.4 still abstained."),
     ("persistent-poison", 2, "The instruction write was rejected by the fixed write policy.")],
    "Every scenario passes with every hard check. The remaining notable writes are correct "
    "refusals: a lower threshold would admit the 0.4 courier, a higher one would drop the 0.6 "
    "fact, and no trace points at top_k.",
    "No further experiment is supported by the evidence; agent-03 stays the parent for human "
    "review.")

MISCITED = decision(
    [("agent-01", 1, "agent-01 raised success to 19/20 but kept mean stored records at 1.70."),
     ("duplicate-confirmation", 3, "A third identical confirmation stored m003.")],
    "Repeated confirmations are stored as new versions and inflate the store.",
    "19/20 with fewer stored records.",
    deduplicate=True)

SCRIPTS = {  # decisions per campaign -> the answers, in order
    4: [FILTERS, DEDUPE, THRESHOLD, STOP],
    5: [FILTERS, MISCITED, DEDUPE, THRESHOLD, STOP],
}


def authoring_client(answers: list[str]) -> anthropic.Anthropic:
    """A client that answers each request with the next scripted answer and stores the pair."""
    queue = iter(answers)

    def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        response = authored_message(body, next(queue))
        store_answer(body, response, "authored", OUTPUT, note=NOTE)
        return httpx2.Response(200, json=response)

    return anthropic.Anthropic(api_key="authoring-no-key", max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handle)))


def main() -> None:
    OUTPUT.unlink(missing_ok=True)  # rebuilt from scratch, so no stale request stays behind
    with tempfile.TemporaryDirectory() as tmp:
        for decisions, answers in SCRIPTS.items():
            study = run_study(Path(tmp) / f"run-{decisions}", campaigns=1, iterations=decisions,
                              client=authoring_client(answers))
            c = study.campaigns[0]
            print(f"{decisions}-decision campaign: {c.stop_reason}, final {c.final.id} "
                  f"{c.final.totals['passed']}/{c.final.totals['total']}, "
                  f"{c.calls} calls, USD {c.cost_usd:.6f}")
    entries = json.loads(OUTPUT.read_text(encoding="utf-8"))
    main_cost = sum(cost_usd(e["response"]["usage"]) for e in entries[:len(SCRIPTS[4])])
    print(f"wrote {len(entries)} answers to {OUTPUT}; the 3 x 4 study replays 12 calls "
          f"costing USD {3 * main_cost:.6f} at {MODEL} prices")


if __name__ == "__main__":
    main()
