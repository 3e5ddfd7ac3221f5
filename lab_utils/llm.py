"""The model layer: which model, what it costs, and how a client is made.

Every lesson talks to Claude through `make_client()`, which returns the real
`anthropic.Anthropic` client in one of three modes:

- replay (the default): the client's HTTP transport answers each request from a
  response stored in data/responses/, found by the request's canonical content.
  No key, no network, the same answer every run. A request with no stored answer
  raises NoStoredAnswer, which shows how it differs from the closest stored one.
- live: `LAB_LIVE=1` and `ANTHROPIC_API_KEY` set. Never while nbgrader grades
  (`NBGRADER_EXECUTION` is set then), so grading never costs money.
- record: `LAB_RECORD=1` on top of live: every answer is also stored, with its
  provenance, so the next run can replay it, before the course's own answers. The file is
  data/responses/recorded.json in a clone, work/responses/recorded.json when the course is
  installed (see `record_file`).

Each switch is 1 (on), or 0 or unset (off): another value ("true", "yes") raises SettingRefused rather
than quietly replaying.

Live spending is counted from each answer's `usage` and capped by `LAB_MAX_USD`.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import math
import os
import socket
import ssl
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import anthropic
import httpx2

from lab_utils import paths
from lab_utils.paths import DATA_DIR

DEFAULT_MODEL = "claude-haiku-5-5"
MODEL = os.environ.get("LAB_MODEL", DEFAULT_MODEL)
RESPONSES_DIR = DATA_DIR / "responses"
RECORDED = "recorded.json"


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float


# List prices in USD per million tokens; cache writes cost 1.25x input, reads 0.1x.
PRICES = {
    "claude-haiku-5-5": Price(1.00, 5.00, 1.25, 0.10),
    "claude-sonnet-5-5": Price(3.00, 15.00, 3.75, 0.30),
    "claude-opus-5-5": Price(5.00, 25.00, 6.25, 0.50),
}


class LiveModeRefused(RuntimeError):
    """Live calls were asked for where they are not allowed."""


class SettingRefused(anthropic.AnthropicError, ValueError):
    """A setting the model layer cannot use: a switch that is neither 1 nor 0, or one under which live spending
    could not be capped. Raised before any call leaves; not an `anthropic.APIError`, so code that records
    failed calls does not catch it."""


def price(model: str = MODEL) -> Price:
    try:
        return PRICES[model]
    except KeyError:
        raise KeyError(f"no price known for model {model!r}; add it to lab_utils.llm.PRICES") from None


def cost_usd(usage, model: str = MODEL) -> float:
    """The cost of one answer from its `usage` (an SDK Usage object or a dict)."""
    u = usage if isinstance(usage, dict) else usage.model_dump()
    p = price(model)
    return (
        (u.get("input_tokens") or 0) * p.input
        + (u.get("output_tokens") or 0) * p.output
        + (u.get("cache_creation_input_tokens") or 0) * p.cache_write
        + (u.get("cache_read_input_tokens") or 0) * p.cache_read
    ) / 1_000_000


SWITCHES = {"LAB_LIVE": "to go live (0 or unset replays stored answers)",
            "LAB_RECORD": "with LAB_LIVE=1 to record live answers (0 or unset records nothing)"}


def _switch(name: str) -> bool:
    """1 is on; 0, empty or unset is off. Anything else is refused: 'true' taken as off would go unnoticed."""
    said = os.environ.get(name, "")
    if said not in ("", "0", "1"):
        raise SettingRefused(f"{name} is {said!r}, neither 1 nor 0: set {name}=1 {SWITCHES[name]}. "
                             "No call was made.")
    return said == "1"


def mode() -> str:
    """'replay', 'live' or 'record', from the environment; SettingRefused for a switch it cannot read."""
    if os.environ.get("NBGRADER_EXECUTION"):
        return "replay"  # grading is always offline, whatever the grader's shell says
    live, record = _switch("LAB_LIVE"), _switch("LAB_RECORD")
    if record and not live:
        say_once("model layer: LAB_RECORD=1 records only with LAB_LIVE=1; this run replays stored answers "
                 "and records nothing")
    if not live:
        return "replay"
    return "record" if record else "live"


def describe_mode() -> str:
    """One line a notebook prints so the reader knows where answers come from."""
    m = mode()
    if m == "replay":
        return f"model layer: replay (offline, stored answers from data/responses/, model {MODEL})"
    return f"model layer: {m} (calls {MODEL}; spending cap USD {spending_cap():.2f})"


@contextmanager
def stored_figures(what: str):
    """Checks, in a `with` block, figures that come from the model's answers: the text states those of the
    stored answers. Replayed, a failed check fails the cell like any other. Live, the model may answer
    otherwise: the cell says so, with the failed check's message (this run's figure), and goes on."""
    try:
        yield
    except (AssertionError, LookupError) as error:
        if mode() == "replay":
            raise
        found = str(error) if isinstance(error, AssertionError) and str(error) else repr(error)
        print(f"{what}: the live answers differ from the stored ones, so the text's figures do not hold "
              f"this time: {found}")


# -- canonical requests and the stored answers ------------------------------------------

def canonical(body: dict) -> str:
    """The request as one stable string: the key stored answers are found by."""
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def request_key(body: dict) -> str:
    return hashlib.sha256(canonical(body).encode()).hexdigest()[:24]


def record_file(directory: Path = RESPONSES_DIR) -> Path:
    """Where record mode stores the answers for `directory`'s requests. Beside them in a clone, where
    instructors record answers for the course; in the work folder when they are an installed package's,
    which is no place to write (read-only on a hub, and pip would not know the file)."""
    directory = Path(directory).resolve()
    if directory.is_relative_to(paths.PACKAGE_DIR):
        return paths.work_root().resolve() / "responses" / RECORDED
    return directory / RECORDED


def answer_files(directory: Path = RESPONSES_DIR) -> tuple[Path, ...]:
    """The files replay reads, in order: a later file's answer to a request replaces an earlier one's, so
    recorded answers come last."""
    recorded = record_file(directory)
    shipped = [path for path in sorted(Path(directory).resolve().glob("*.json")) if path != recorded]
    return (*shipped, recorded) if recorded.is_file() else tuple(shipped)


@lru_cache(maxsize=None)
def _stored(files: tuple[Path, ...]) -> dict[str, tuple[dict, Path]]:
    answers: dict[str, tuple[dict, Path]] = {}
    for path in files:
        for entry in json.loads(path.read_text(encoding="utf-8")):
            answers[request_key(entry["request"])] = entry, path
    return answers


def stored_answers(directory: Path = RESPONSES_DIR) -> dict[str, dict]:
    """Every stored answer under `directory` (and in its record file), by request key."""
    return {key: entry for key, (entry, _) in _stored(answer_files(directory)).items()}


def store_answer(request: dict, response: dict, provenance: str, file: Path, note: str = "") -> str:
    """Add one request/answer pair to a response file; returns the request key.

    `provenance` is "recorded" for answers the model gave, "authored" for answers
    written by hand to show a behaviour offline.
    """
    if provenance not in ("recorded", "authored"):
        raise ValueError(f"provenance must be 'recorded' or 'authored', not {provenance!r}")
    file = Path(file)
    entries = json.loads(file.read_text(encoding="utf-8")) if file.exists() else []
    key = request_key(request)
    entries = [e for e in entries if request_key(e["request"]) != key]
    entry = {"key": key, "provenance": provenance, "stored_at": dt.date.today().isoformat()}
    if note:
        entry["note"] = note
    entries.append({**entry, "request": request, "response": response})
    file.write_text(json.dumps(entries, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    _stored.cache_clear()
    return key


def _estimate_tokens(text: str) -> int:
    return max(1, round(len(text) / 4))


def authored_message(request: dict, text: str) -> dict:
    """A Messages API response body carrying `text`, for answers written by hand.

    Token counts are estimated the way a tokenizer roughly counts English (4 characters a
    token); structured-output instructions that the API adds count as 180 input tokens.
    """
    return {
        "id": f"msg_authored_{request_key(request)}",
        "type": "message",
        "role": "assistant",
        "model": request.get("model", MODEL),
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": _estimate_tokens(canonical(request)) + 180,
                  "output_tokens": _estimate_tokens(text) + 4,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


class NoStoredAnswer(anthropic.AnthropicError):
    """Replay mode met a request it has no answer for.

    Deliberately not an `anthropic.APIError`: no call was made, so code that records failed calls
    (and charges them) must not catch it. It stops the cell that made the request, with one message.
    """


def _lines(body: dict) -> list[str]:
    """The request as `path: value` lines, multi-line texts split, so a diff shows what changed."""
    out: list[str] = []

    def walk(node, path: str) -> None:
        if isinstance(node, dict):
            for key in sorted(node):
                walk(node[key], f"{path}.{key}" if path else key)
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{path}[{i}]")
        elif isinstance(node, str) and "\n" in node:
            out.extend(f"{path}: {line}" for line in node.splitlines())
        else:
            out.append(f"{path}: {json.dumps(node, ensure_ascii=False)}")

    walk(body, "")
    return out


DIFF_LINES = 8  # enough to see the change; a request rebuilt from scratch would drown the reader
DIFF_WIDTH = 160


def _short_diff(stored: dict, body: dict) -> str:
    changed = [line for line in difflib.unified_diff(_lines(stored), _lines(body), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("---", "+++"))]
    shown = [f"    {line[:DIFF_WIDTH]}" + ("…" if len(line) > DIFF_WIDTH else "")
             for line in changed[:DIFF_LINES]]
    if len(changed) > DIFF_LINES:
        shown.append(f"    … and {len(changed) - DIFF_LINES} more changed lines")
    return "\n".join(shown)


def no_stored_answer(body: dict, directory: Path = RESPONSES_DIR) -> NoStoredAnswer:
    """The error for a request replay cannot answer: what changed against the closest stored
    request, how to undo it, and how to go live."""
    answers = stored_answers(directory)
    head = (f"Replay mode has no stored answer for this request (key {request_key(body)}, model "
            f"{body.get('model')}, message starting {_first_words(body)!r}).")
    live = ("To ask the model itself instead, restart with LAB_LIVE=1 and ANTHROPIC_API_KEY set "
            "(add LAB_RECORD=1 to store its answers for offline runs).")
    if not answers:
        return NoStoredAnswer(f"{head} There are no stored answers in {directory}. {live}")
    lines = set(_lines(body))
    closest = min(answers.values(), key=lambda entry: len(lines ^ set(_lines(entry["request"]))))
    return NoStoredAnswer(
        f"{head}\nIt differs from the closest stored request (key {request_key(closest['request'])}) here "
        f"(- stored, + this request):\n{_short_diff(closest['request'], body)}\n"
        "To replay, undo that change: put the cell's inputs back as the lesson has them and run the "
        f"notebook again from the top. {live}")


def _find(body: dict, directory: Path) -> tuple[dict, Path]:
    found = _stored(answer_files(directory)).get(request_key(body))
    if found is None:
        raise no_stored_answer(body, directory)
    return found


def stored_answer(body: dict, directory: Path = RESPONSES_DIR) -> dict:
    """The stored entry (request, response, provenance) for this request; NoStoredAnswer if none."""
    return _find(body, directory)[0]


SAID: set[str] = set()


def say_once(line: str) -> None:
    """Print a line the first time this kernel says it."""
    if line not in SAID:
        SAID.add(line)
        print(line)


def _first_words(body: dict) -> str:
    for message in body.get("messages", []):
        content = message.get("content")
        text = content if isinstance(content, str) else " ".join(
            part.get("text", "") for part in content if isinstance(part, dict))
        return " ".join(text.split())[:80]
    return ""


def replay_handler(directory: Path = RESPONSES_DIR):
    """An httpx2 handler answering Messages requests from stored answers.

    A request with no stored answer raises NoStoredAnswer, which the SDK passes on unchanged.
    """

    def handle(request: httpx2.Request) -> httpx2.Response:
        entry, source = _find(json.loads(request.content), directory)
        if source == record_file(directory):  # a student whose lesson now behaves oddly can find and delete it
            say_once(f"model layer: replaying an answer recorded in {source}, not one the course ships; "
                     "delete that file to replay the course's answers")
        return httpx2.Response(200, json=entry["response"])

    return handle


# -- live calls: counted, capped, optionally recorded ------------------------------------

def spending_cap() -> float:
    """LAB_MAX_USD in US dollars; SettingRefused if it is not an amount the cap can hold to."""
    said = os.environ.get("LAB_MAX_USD", "1.00")
    try:
        cap = float(said)
    except ValueError:
        cap = math.nan
    if not (math.isfinite(cap) and cap >= 0):
        raise SettingRefused(f"LAB_MAX_USD is {said!r}, not an amount of US dollars: set it to a number like 0.50 "
                             "or 2 (0 or more, a dot before decimals), or unset it for USD 1.00. No call was made.")
    return cap


def check_price(model: str) -> None:
    """Refuse a model whose spending the meter could not count, before its call leaves."""
    if model not in PRICES:
        raise SettingRefused(f"LAB_MODEL (or the request) names {model!r}, a model with no known price, so the "
                             f"spending cap could not hold: use one of {', '.join(PRICES)}, or add its price to "
                             "lab_utils.llm.PRICES. No call was made.")


@dataclass
class Meter:
    """Live spending in this process."""

    calls: int = 0
    usd: float = 0.0


METER = Meter()


OFFLINE = "Nothing was stored; unset LAB_LIVE to run offline from stored answers."
ADVICE = {
    401: "The server did not accept the key: check ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL, if you set it).",
    403: "The key may not use this model: check the key's workspace, or LAB_MODEL.",
    404: "No such model or endpoint: check LAB_MODEL, and ANTHROPIC_BASE_URL if you set it.",
    429: "Rate limited: wait {wait} and run the cell again (the course never retries by itself).",
    529: "The API is overloaded: wait a minute and run the cell again.",
}


def _host(request: httpx2.Request) -> str:
    """host:port, as a message about a live call names it."""
    return f"{request.url.host}:{request.url.port or (443 if request.url.scheme == 'https' else 80)}"


def _failed(response: httpx2.Response, request: httpx2.Request) -> httpx2.Response:
    """An error answer rewritten as one plain-text message: the SDK raises its usual error class
    (AuthenticationError, RateLimitError, OverloadedError...) with this text as the message."""
    try:
        error = json.loads(response.read())["error"]
        said = f"{error['type']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        said = response.text.strip()[:200] or "no explanation"
    wait = response.headers.get("retry-after")
    advice = ADVICE.get(response.status_code, "The server failed: run the cell again later.")
    text = (f"Live call to {_host(request)} failed with "
            f"{response.status_code} ({said}). {advice.format(wait=f'{wait} s' if wait else 'a minute')} {OFFLINE}")
    return httpx2.Response(response.status_code, text=text, headers={"retry-after": wait} if wait else {})


class LiveTimeout(anthropic.APITimeoutError):
    """A live call that got no answer in time, said plainly."""

    def __init__(self, request: httpx2.Request) -> None:
        seconds = (request.extensions.get("timeout") or {}).get("read")
        anthropic.APIConnectionError.__init__(self, request=request, message=(
            f"Live call to {_host(request)} got no answer within {seconds} s. "
            f"Run the cell again, or give it longer (make_client(timeout=...)). {OFFLINE}"))


def _cause(error: BaseException) -> str:
    """What lies under a transport error (the system's error at the end of its chain), said plainly."""
    while (under := error.__cause__ or error.__context__) is not None:
        error = under
    if isinstance(error, ConnectionRefusedError):
        return "connection refused (nothing listens on that port)"
    if isinstance(error, socket.gaierror):
        return "the host name does not resolve"
    if isinstance(error, ssl.SSLError):
        return f"TLS failed ({error.reason or error})"
    return str(error) or type(error).__name__


class LiveConnectionFailed(anthropic.APIConnectionError):
    """A live call that reached no server, said plainly: the cause, the host, what to do."""

    def __init__(self, request: httpx2.Request, error: httpx2.TransportError) -> None:
        base = os.environ.get("ANTHROPIC_BASE_URL")
        check = (f"check that a server runs at ANTHROPIC_BASE_URL={base} and that the URL is right" if base else
                 "check the network (ANTHROPIC_BASE_URL is not set, so the call goes to the API itself)")
        anthropic.APIConnectionError.__init__(self, request=request, message=(
            f"Live call to {_host(request)} failed: {_cause(error)}. To go on, {check}, then run the cell "
            f"again. {OFFLINE}"))


def _refused(response: httpx2.Response, request: httpx2.Request, why: str) -> anthropic.APIResponseValidationError:
    """The error for a 200 whose body the course will not use: `why`, in one line."""
    response.request = request  # the SDK's error reads the request from the response
    return anthropic.APIResponseValidationError(response, response.text[:200], message=(
        f"Live call to {_host(request)} answered with {why} {OFFLINE}"))


def _answer(response: httpx2.Response, request: httpx2.Request) -> dict:
    """The answer's JSON if it has the shape of a Messages API answer and says what it cost; a clear error
    if not."""
    try:
        data = json.loads(response.read())
        content = data["content"]
    except (ValueError, KeyError, TypeError):
        content = None
    if not isinstance(content, list):
        raise _refused(response, request, "something that is not a Messages API answer (JSON with content and "
                                          "usage): check that ANTHROPIC_BASE_URL points at an Anthropic-compatible "
                                          "server.")
    # Refused rather than counted at max_tokens: a worst case needs the input tokens too, which only usage reports.
    usage = data.get("usage")
    if not (isinstance(usage, dict) and all(_is_count(usage.get(n)) for n in ("input_tokens", "output_tokens"))):
        raise _refused(response, request, "no usage (input and output tokens): the server does not report usage, "
                                          "and the spending cap needs it to count the call.")
    return data


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _says_something(data: dict) -> bool:
    """Whether an answer has a block with text or tool input: an empty one is not worth replaying."""
    return any(isinstance(block, dict) and (block.get("text") or isinstance(block.get("input"), dict))
               for block in data["content"])


class RecordFileError(anthropic.AnthropicError):
    """Record mode cannot write its file. Not an `anthropic.APIError`: code that records failed calls must
    not catch it; it stops the cell with one message."""

    def __init__(self, file: Path, error: OSError, when: str) -> None:
        super().__init__(
            f"Record mode cannot write {file} ({error.strerror or error}); {when}. Make that folder writable, "
            "set LAB_WORK_DIR to a folder that is (an installed course records into the work folder), "
            "or unset LAB_RECORD.")


class LiveTransport(httpx2.BaseTransport):
    """The network transport, with the spending cap and (in record mode) storage."""

    def __init__(self, record_file: Path | None, inner: httpx2.BaseTransport | None = None) -> None:
        self._inner = inner or httpx2.HTTPTransport()
        self._record_file = record_file

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        check_price(body.get("model", MODEL))
        if METER.usd >= spending_cap():
            return httpx2.Response(429, text=(
                f"Spending cap reached: USD {METER.usd:.4f} spent of LAB_MAX_USD={spending_cap():.2f}, so no "
                "call was made. Raise LAB_MAX_USD to go on, or unset LAB_LIVE to run offline."))
        try:
            response = self._inner.handle_request(request)
        except httpx2.TimeoutException:
            raise LiveTimeout(request) from None
        except httpx2.TransportError as error:
            raise LiveConnectionFailed(request, error) from None
        if response.status_code != 200:
            return _failed(response, request)
        data = _answer(response, request)
        METER.calls += 1
        METER.usd += cost_usd(data["usage"], body.get("model", MODEL))
        if not _says_something(data):
            raise _refused(response, request, "no text and no tool input (an empty content list).")
        if self._record_file is not None:
            try:
                store_answer(body, data, "recorded", self._record_file)
            except OSError as error:
                raise RecordFileError(self._record_file, error, "the call was made and counted") from None
            say_once(f"model layer: recording answers into {self._record_file} "
                     "(offline runs replay them before the course's own)")
        return httpx2.Response(200, json=data)

    def close(self) -> None:
        self._inner.close()


def make_client(*, timeout: float = 60.0, responses_dir: Path = RESPONSES_DIR) -> anthropic.Anthropic:
    """The anthropic client for the current mode. No silent retries in any mode."""
    m = mode()
    if m == "replay":
        transport: httpx2.BaseTransport = httpx2.MockTransport(replay_handler(responses_dir))
        # The SDK insists on a key; this placeholder never leaves the process.
        return anthropic.Anthropic(api_key="replay-mode-no-key", max_retries=0, timeout=timeout,
                                   http_client=httpx2.Client(transport=transport))
    key = os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise LiveModeRefused("LAB_LIVE=1 needs ANTHROPIC_API_KEY in the environment; "
                              "unset LAB_LIVE to run offline from stored answers.")
    spending_cap()
    check_price(MODEL)
    recording = record_file(responses_dir) if m == "record" else None
    if recording is not None:
        try:
            recording.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RecordFileError(recording, error, "no call was made") from None
    return anthropic.Anthropic(api_key=key, max_retries=0, timeout=timeout,
                               http_client=httpx2.Client(transport=LiveTransport(recording)))


def text_of(message) -> str:
    """The text blocks of a Message, joined."""
    return "".join(block.text for block in message.content if block.type == "text")
