"""A small Messages API server on 127.0.0.1, for testing the live path over real HTTP.

It answers POST /v1/messages the way the API does for the course's calls: a request it knows
(the course's stored answers, by the request's canonical content) gets that answer, any other
a short text answer with usage; a wrong key (x-api-key or a bearer token) gets 401. `behaviour` makes it fail instead:
"rate_limited" (429 with retry-after), "overloaded" (529), "malformed" (200 with a body that is
not a Messages answer), "empty" (200, a Messages answer with no content), "usage_empty" or
"usage_missing" (200, an answer with `"usage": {}` or none) or "stall" (no answer until released, past
any client timeout).
"""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lab_utils import llm
from ports import unused_port

KEY = "sk-ant-test-key-for-the-local-server"
RETRY_AFTER = "17"


class MessagesServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", unused_port()), Handler)
        self.behaviour = "answer"
        self.requests: list[dict] = []  # the bodies of every request that reached the server
        self.release = threading.Event()  # ends a stall

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def reply(body: dict) -> dict:
    """The stored answer to a request the course makes, or a short answer with usage."""
    stored = llm.stored_answers().get(llm.request_key(body))
    if stored is not None:
        return stored["response"]
    return {"id": "msg_local", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": "an answer from the local server"}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1200, "output_tokens": 300,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}


def error(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


class Handler(BaseHTTPRequestHandler):
    server: MessagesServer

    def log_message(self, *args) -> None:  # quiet: pytest shows failures, not access logs
        pass

    def send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.path != "/v1/messages":
            return self.send(404, json.dumps(error("not_found_error", f"no {self.path}")).encode())
        self.server.requests.append(body)
        behaviour = self.server.behaviour
        if KEY not in (self.headers.get("x-api-key"), self.headers.get("authorization", "").removeprefix("Bearer ")):
            self.send(401, json.dumps(error("authentication_error", "invalid x-api-key")).encode())
        elif behaviour == "rate_limited":
            self.send(429, json.dumps(error("rate_limit_error", "Number of requests has exceeded your rate limit")).encode(),
                      {"retry-after": RETRY_AFTER})
        elif behaviour == "overloaded":
            self.send(529, json.dumps(error("overloaded_error", "Overloaded")).encode())
        elif behaviour == "malformed":
            self.send(200, b"<html>upstream proxy error</html>")
        elif behaviour == "empty":
            self.send(200, json.dumps({**reply(body), "content": []}).encode())
        elif behaviour == "usage_empty":
            self.send(200, json.dumps({**reply(body), "usage": {}}).encode())
        elif behaviour == "usage_missing":
            self.send(200, json.dumps({k: v for k, v in reply(body).items() if k != "usage"}).encode())
        elif behaviour == "stall":
            self.server.release.wait(timeout=30)
        else:
            self.send(200, json.dumps(reply(body)).encode())


@contextmanager
def serve():
    """A running server; stopped, and any stall released, on exit."""
    server = MessagesServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()


# The ways the model layer itself fails, as opposed to an answer that arrives and is wrong.
LAYER_FAILURES = ("closed port", "wrong key", "spending cap", "rate_limited", "overloaded", "malformed", "stall")


def fail_live_calls(how: str, server: MessagesServer, monkeypatch) -> None:
    """From now on every live call fails the way `how` (one of LAYER_FAILURES) says."""
    if how == "closed port":
        monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{unused_port()}")
    elif how == "wrong key":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-this-one")
    elif how == "spending cap":
        monkeypatch.setenv("LAB_MAX_USD", "0")
    else:
        server.behaviour = how
