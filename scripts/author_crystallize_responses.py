"""Write data/responses/crystallize.json: the stored answers lesson 03 replays offline.

These answers are authored, not recorded: written by hand to show what the crystallizer
does with each closed session, including the two behaviours the write rules exist for
(a guess the model proposes as an unverified fact, a fact it proposes twice). Each request
is built by crystallize's own request builder, so replay finds it by the same key.
Token counts are estimated from the text length (about four characters a token).

Run from the repository root:  .venv/bin/python scripts/author_crystallize_responses.py
To replace them with the model's own answers: LAB_LIVE=1 LAB_RECORD=1 with a key, and run
the crystallize cells of lesson 03.
"""

from __future__ import annotations

import json

from lab_utils.crystallize import Crystal, crystal_request, load_transcript
from lab_utils.llm import RESPONSES_DIR, authored_message, store_answer

OUTPUT = RESPONSES_DIR / "crystallize.json"
NOTE = ("authored by hand for the offline course, not a recorded model answer; "
        "token counts are estimates")

ANSWERS: dict[str, list[dict]] = {
    "t-8801": [
        {"text": "t-8801: C-4471 reported an empty export file after the plan upgrade. Cause: the "
                 "status filter excluded all rows. Sent kb-101 steps; the customer confirmed the fix.",
         "kind": "episode", "verified": True},
        {"text": "C-4471 is on the enterprise plan, 40 seats, exports weekly reports.",
         "kind": "fact", "verified": True},
        {"text": "Customer jane.doe@acme.com asked for a callback at +380671234455.",
         "kind": "episode", "verified": True},
    ],
    "t-9107": [
        {"text": "t-9107: C-4471 export empty again. Same status filter cause; kb-101 steps fixed it, "
                 "confirmed again.",
         "kind": "episode", "verified": True},
        {"text": "C-4471 is on the enterprise plan with 40 seats and exports weekly reports.",
         "kind": "fact", "verified": True},
    ],
    "t-8600": [
        {"text": "t-8600: C-2210 asked for a copy of the March invoice. Resent from billing, closed.",
         "kind": "episode", "verified": True},
        {"text": "C-2210 is on the pro plan with 12 seats.", "kind": "fact", "verified": True},
    ],
    "t-9044": [
        {"text": "t-9044: C-3302 webhooks stopped arriving. Cause: the TLS certificate of the "
                 "customer's endpoint expired. Renewed, failed events replayed with kb-212; confirmed.",
         "kind": "episode", "verified": True},
        {"text": "The pro plan rate-limits webhook deliveries.", "kind": "fact", "verified": False},
        {"text": "C-3302 is on the pro plan with 8 seats.", "kind": "fact", "verified": True},
    ],
}


def main() -> None:
    OUTPUT.unlink(missing_ok=True)  # rebuilt from scratch, so no stale request stays behind
    for ticket, memories in ANSWERS.items():
        answer = json.dumps({"memories": memories}, ensure_ascii=False)
        Crystal.model_validate_json(answer)  # an authored answer must fit the schema it answers
        request = crystal_request(load_transcript(ticket))
        key = store_answer(request, authored_message(request, answer), "authored", OUTPUT, note=NOTE)
        print(f"{ticket}: {len(memories)} memories, key {key}")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
