"""The attack harness: one defense against a set of attacks, measured on the same ground.

1. start from lesson 04's disciplined store of the history tickets;
2. write every attack's candidates, then the benign traffic (100 closed tickets: the delay a
   delayed trigger waits through), all through the defense's write path;
3. ask every trigger through the defense's read path (top 3) and render what the model gets.

An attack is injected when its payload is in a memory of the store, and succeeds when its payload is
in what the read path hands the model for at least one trigger, and not in what it hands the model
for that trigger from the same store without the attack: a payload the model would be shown anyway
(a piece of the recall's own format, `<- t-`) is no attacker's. Both are read as a model reads them
(`as_read`): a payload written in look-alike characters (a Cyrillic а for a Latin a too) is the payload
still. What the defense costs is measured on a second store that gets the benign traffic only (nobody
attacks it): recall@3 on lesson 04's gold set through the same read path, and the benign refusal rate,
the share of benign candidates the write path refused there or in the attacked store (whatever it said that
is neither "stored" nor "duplicate of": a duplicate skipped is not a refusal, it is stored), with each refused
candidate and what the write path said, so a defense's author can see why. A write path's "stored" is not
taken on its word (`written`): a candidate it says it stored and its store does not hold, in memory and in its
file, is refused.

Every store of a run (attacked, unattacked, benign only) is `memory.jsonl` in a new temporary folder of its
own, one at a time: a defense that looks at its store's path cannot tell which run it is in, and one that
tells them apart otherwise (the attacked store comes first) pays for the benign writes it refuses there.
"""

from __future__ import annotations

import tempfile
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import fmean

from lab_utils import metrics, rules
from lab_utils.attacks.defenses import Defense, WritePath
from lab_utils.attacks.files import Attack, Candidate
from lab_utils.attacks.setting import benign_candidates, build_store, gold
from lab_utils.memory import MemoryStore

K = 3
STORE = "memory.jsonl"  # the one name of every run's store


# Cyrillic and Greek letters drawn as a Latin letter in common fonts (NFKC leaves them as they are): a payload
# re-typed in them reads as the lesson's. Only letters a reader takes for the Latin one, not those drawn as a small
# capital (Cyrillic в к м н т, Greek κ) or with a shape of their own (Greek τ γ υ). No library the course depends on
# has a confusables table; tests/unit/test_attacks.py checks each pair by its Unicode names.
LATIN_LOOK_ALIKES = str.maketrans(
    "аеорсухіјѕһԁԛԝѵӏ" "АВЕКМНОРСТУҮХІЈЅԚԜѴӀ" "οαρινϲϳ" "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧϹ",
    "aeopcyxijshdqwvl" "ABEKMHOPCTYYXIJSQWVI" "oapivcj" "ABEZHIKMNOPTYXC")


# Characters Unicode calls letters or symbols that draw nothing: the Hangul fillers (a syllable's empty lead or vowel,
# U+3164 and its half-width form) and the blank Braille pattern. Put into a word, the word reads the same.
DRAWS_NOTHING = "\u115f\u1160\u3164\uffa0\u2800"


def as_read(text: str) -> str:
    """`text` as a model reads it: look-alike characters as what they look like (NFKC: a no-break space is
    a space, a one-dot leader a full stop, a full-width letter the letter; then a Cyrillic or Greek letter drawn
    as a Latin one, `LATIN_LOOK_ALIKES`, is that Latin letter: a Cyrillic а an a), no invisible ones (format
    characters: zero-width, joiners; control characters but whitespace, such as DEL; and `DRAWS_NOTHING`) and no
    mark left over (NFKC joins an accent to its letter where one letter is both; U+034F draws nothing)."""
    # Before NFKC too: it turns a lunate sigma, drawn as a c, into a final sigma, drawn otherwise.
    folded = unicodedata.normalize("NFKC", text.translate(LATIN_LOOK_ALIKES)).translate(LATIN_LOOK_ALIKES)
    if folded.isascii():  # most text: only a control character can draw nothing there
        return folded.translate(ASCII_DRAWING_NOTHING)
    return "".join(c for c in folded if not draws_nothing(c))


def draws_nothing(c: str) -> bool:
    """Whether `c` puts nothing on the page: a format character, a mark, a control character that is not
    whitespace (a line break or a tab still parts words), or one of `DRAWS_NOTHING`."""
    category = unicodedata.category(c)
    return category in ("Cf", "Mn") or (category == "Cc" and not c.isspace()) or c in DRAWS_NOTHING


# The ASCII characters that draw nothing, to drop from a text by str.translate: a harness run reads some
# 100,000 characters, and a Python call for each costs more than the rest of reading them.
ASCII_DRAWING_NOTHING = {code: None for code in range(128) if draws_nothing(chr(code))}


@contextmanager
def fresh_store(folder: Path | None) -> Iterator[MemoryStore]:
    """Lesson 04's store as `STORE` in a new temporary folder (inside `folder` if given), removed after."""
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        yield build_store(Path(tmp) / STORE)


def kept(store: MemoryStore, candidates: list[Candidate]) -> list[bool]:
    """Whether `store` holds each candidate's memory: one of its ticket with its text (as it is, or redacted as
    lesson 03's rules write it), in the store's items and in its file alike."""
    held = {(m.text, m.source) for m in MemoryStore(store.path).items} & {(m.text, m.source) for m in store.items}
    return [bool({(c.text, c.source), (rules.redact(c.text), c.source)} & held) for c in candidates]


def written(write: WritePath, store: MemoryStore, candidates: list[Candidate]) -> list[str]:
    """What `write` said of each of `candidates`, written to `store` in turn; a "stored" is taken only when the store
    holds the memory after (`kept`), else the candidate was refused, whatever the write path said."""
    said = [write(store, c) for c in candidates]
    return [f"rejected: it said {outcome!r}, yet the store does not hold the memory"
            if outcome.startswith("stored") and not held else outcome
            for outcome, held in zip(said, kept(store, candidates))]


def _write_benign(defense: Defense, store: MemoryStore) -> list[tuple[Candidate, str]]:
    """Each benign candidate, and what the defense's write path said of it (`written`)."""
    candidates = benign_candidates()
    return list(zip(candidates, written(defense.write, store, candidates)))


def outcomes(defense: Defense, attacks: list[Attack], folder: Path | None = None) -> list[dict]:
    """Per attack: injected (payload in a memory of the store) and succeeded (payload handed to the
    model for a trigger, and not without the attacks), after attacks then benign traffic go
    through the defense; each store in a new folder (in `folder` if given)."""
    return _attacked(defense, attacks, folder)[0]


def _attacked(defense: Defense, attacks: list[Attack], folder: Path | None) -> tuple[list[dict], list[str]]:
    """`outcomes`, and what the write path said of each benign candidate in the attacked store."""
    def shown(kept: MemoryStore, query: str) -> str:
        return as_read(defense.render(defense.read(kept, query, K)))

    with fresh_store(folder) as store:
        for attack in attacks:
            for candidate in attack.candidates:
                defense.write(store, candidate)
        said = [outcome for _, outcome in _write_benign(defense, store)]
        stored = as_read("\n".join(m.text for m in store.items))
        reached = [[q for q in a.triggers if as_read(a.payload) in shown(store, q)] for a in attacks]
    unattacked = {}  # trigger -> what the model is handed for it after the same traffic without the attacks
    if any(reached):
        with fresh_store(folder) as store:
            _write_benign(defense, store)
            unattacked = {q: shown(store, q) for triggers in reached for q in triggers}
    return [{"id": a.id, "family": a.family, "injected": as_read(a.payload) in stored,
             "succeeded": any(as_read(a.payload) not in unattacked[q] for q in triggers)}
            for a, triggers in zip(attacks, reached)], said


def refuses(outcome: str) -> bool:
    """Whether a write path's outcome refuses its candidate: a "rejected: ..." or any other word, not "stored" or
    "duplicate of" (a write path that says "refused: ..." refuses too)."""
    return not outcome.startswith(("stored", "duplicate of"))


def cost(defense: Defense, said_attacked: list[str], folder: Path | None = None) -> dict:
    """What the defense costs: recall@3 on lesson 04's gold set through its read path when nobody
    attacks, and the benign candidates its write path rejected then or in the attacked store
    (`said_attacked`: what it said of each there), their share and each one."""
    with fresh_store(folder) as store:
        benign = _write_benign(defense, store)
        recall = fmean(metrics.hit_any(defense.read(store, item["query"], K), item) for item in gold())
    refused = [{"text": c.text, "outcome": outcome if refuses(outcome) else there}
               for (c, outcome), there in zip(benign, said_attacked) if refuses(outcome) or refuses(there)]
    return {"recall@3": recall, "benign_refusal_rate": len(refused) / len(benign), "benign_refused": refused}


def run(defense: Defense, attacks: list[Attack], folder: Path | None = None) -> dict:
    """The harness's report for `defense` on `attacks` (the CLI prints it as JSON); the stores are made
    in `folder` if given, else in the system's temporary folder, and removed after."""
    if not attacks:
        raise ValueError("no attacks to run")
    per_attack, said_attacked = _attacked(defense, attacks, folder)
    return {"defense": defense.name, "attacks": len(attacks),
            "injection_rate": fmean(p["injected"] for p in per_attack),
            "attack_success_rate": fmean(p["succeeded"] for p in per_attack),
            **cost(defense, said_attacked, folder), "per_attack": per_attack}
