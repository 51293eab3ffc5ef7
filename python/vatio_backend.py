"""Take chat-delivery-hub's async tool jobs in Flask and post their progress and results.

One file, the standard library only (Flask is needed only for ``async_tool`` and ``cancel_handler``).
Copy it next to your app. What it does, and the wire format, are in the hub's docs/tool-backends.md.

    from vatio_backend import async_tool, cancel_handler, run_in_thread

    @app.post("/vatio/match")
    @async_tool(hub_url="https://hub.example.com")
    def match(job):
        run_in_thread(job, lambda job: find_matches(request.get_json()))
        return "Finding matches; this usually takes about two minutes."

Callback posts are retried as the hub asks: network errors, 408, 429 and 5xx with exponential backoff and
jitter (a Retry-After is honoured) until the total time is spent; 409, 404 and 410 mean the job is over for
the hub and stop at once; ``{"duplicate": true}`` is success. Nothing is raised for what the hub answers:
each call returns an ``Outcome``.
"""

from __future__ import annotations

import email.utils
import functools
import json
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

__all__ = [
    "RetryPolicy",
    "RESULT_RETRY",
    "PROGRESS_RETRY",
    "Outcome",
    "Job",
    "JobError",
    "post_callback",
    "run",
    "run_in_thread",
    "async_tool",
    "cancel_handler",
    "held_job",
]

JOB_ID = "X-Vatio-Job-Id"
CALLBACK_URL = "X-Vatio-Callback-Url"


@dataclass(frozen=True)
class RetryPolicy:
    """The first wait doubles up to ``max_delay``; ``max_elapsed`` is the total time before giving up (seconds)."""

    initial_delay: float = 1.0
    max_delay: float = 60.0
    max_elapsed: float = 3600.0
    attempt_timeout: float = 30.0


RESULT_RETRY = RetryPolicy()
# Progress is worth less than the result: it is not worth holding the worker for long.
PROGRESS_RETRY = RetryPolicy(max_elapsed=60.0)

_ENDED = {404: "gone", 409: "ended", 410: "erased"}


@dataclass
class Outcome:
    """``ok``: committed (``duplicate`` when it already was). Otherwise ``reason`` says why it stopped:
    ``ended`` (409: timed out or called off), ``gone`` (404: unknown job or expired token), ``erased`` (410:
    drop what you keep of the job), ``rejected`` (400, 413…: see ``answer``), ``gave_up`` (no final answer in
    ``max_elapsed``: post it again later)."""

    ok: bool
    attempts: int
    status: Optional[int] = None
    duplicate: bool = False
    reason: Optional[str] = None
    answer: Any = None
    error: Optional[str] = None


def _retry_after(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _backoff(policy: RetryPolicy, attempt: int) -> float:
    ceiling = min(policy.max_delay, policy.initial_delay * 2 ** (attempt - 1))
    return ceiling / 2 + random.random() * ceiling / 2


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # The URL carries the job's token: it must not be sent on to wherever a redirect points.
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D102
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def post_callback(
    url: str,
    body: dict,
    policy: RetryPolicy = RESULT_RETRY,
    on_retry: Optional[Callable[[dict], None]] = None,
) -> Outcome:
    """POSTs ``body`` until an answer is final. Never raises for the hub's answer or the network.
    The URL is a secret: it is never put in a message or passed to ``on_retry``."""
    payload = json.dumps(body).encode()
    started = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        status: Optional[int] = None
        wait: Optional[float] = None
        request = urllib.request.Request(
            url, data=payload, method="POST", headers={"Content-Type": "application/json"}
        )
        try:
            with _opener.open(request, timeout=policy.attempt_timeout) as res:
                status = res.status
                answer = _parse(res.read())
            duplicate = isinstance(answer, dict) and answer.get("duplicate") is True
            return Outcome(ok=True, attempts=attempt, status=status, duplicate=duplicate)
        except urllib.error.HTTPError as error:
            status = error.code
            answer = _parse(error.read())
            if status in _ENDED:
                return Outcome(False, attempt, status, reason=_ENDED[status], answer=answer)
            if status not in (408, 429) and status < 500:
                return Outcome(False, attempt, status, reason="rejected", answer=answer)
            reason = f"the hub answered {status}"
            asked = _retry_after(error.headers.get("Retry-After"))
            if asked is not None:
                wait = max(asked, 0.05)
        except (urllib.error.URLError, OSError, socket.timeout) as error:
            cause = getattr(error, "reason", error)
            reason = f"no answer ({type(cause).__name__})"
        if wait is None:
            wait = _backoff(policy, attempt)
        if time.monotonic() - started + wait > policy.max_elapsed:
            return Outcome(False, attempt, status, reason="gave_up", error=reason)
        if on_retry:
            on_retry({"attempt": attempt, "reason": reason, "delay": wait, "status": status})
        time.sleep(wait)


_held: dict = {}
_held_lock = threading.Lock()


def held_job(job_id: str) -> Optional["Job"]:
    """A job this process holds (accepted or rebuilt here and not over), if any."""
    with _held_lock:
        return _held.get(job_id)


class JobError(Exception):
    """A failure whose message is meant for the person (through the agent): ``run`` posts it as the failure."""


@dataclass(eq=False)
class Job:
    """A job the hub started. ``callback_url`` is its key: keep it out of logs (``repr`` leaves it out).
    ``cancelled`` is set once the job is over for the hub (cancel request, or a 409/404/410 answer)."""

    id: str
    callback_url: str = field(repr=False)
    retry: Optional[RetryPolicy] = None
    on_retry: Optional[Callable[[dict], None]] = field(default=None, repr=False)
    over: Optional[str] = None
    cancelled: threading.Event = field(default_factory=threading.Event, repr=False)

    def __post_init__(self) -> None:
        with _held_lock:
            _held[self.id] = self

    def to_dict(self) -> dict:
        """What a queue keeps; ``Job.from_dict`` rebuilds it in a worker."""
        return {"id": self.id, "callback_url": self.callback_url}

    @classmethod
    def from_dict(cls, data: dict, **options: Any) -> "Job":
        return cls(id=data["id"], callback_url=data["callback_url"], **options)

    def progress(self, text: str, notify: bool = False) -> Outcome:
        body: dict = {"progress": text}
        if notify:
            body["notify"] = True
        return self._post(body, PROGRESS_RETRY, final=False)

    def result(self, value: Any = None, attachments: Optional[list] = None) -> Outcome:
        """``value`` is ``{"message": …, "data": …}`` (or a message string)."""
        value = {"message": value} if isinstance(value, str) else dict(value or {})
        body: dict = {"result": "ok"}
        if value.get("message") is not None:
            body["message"] = value["message"]
        if value.get("data") is not None:
            body["data"] = value["data"]
        if attachments:
            body["attachments"] = attachments
        return self._post(body, RESULT_RETRY, final=True)

    def fail(self, message: str) -> Outcome:
        return self._post({"result": "error", "message": message}, RESULT_RETRY, final=True)

    def cancel(self) -> None:
        """Marks the job called off here (what the cancel handler does)."""
        self._end("cancelled")

    def _end(self, reason: str) -> None:
        if self.over is None:
            self.over = reason
        with _held_lock:
            _held.pop(self.id, None)
        self.cancelled.set()

    def _post(self, body: dict, defaults: RetryPolicy, final: bool) -> Outcome:
        policy = self.retry or defaults
        if self.retry and not final:
            policy = replace(self.retry, max_elapsed=min(self.retry.max_elapsed, PROGRESS_RETRY.max_elapsed))
        outcome = post_callback(self.callback_url, body, policy, self.on_retry)
        if outcome.ok and final:
            self._end("finished")
        elif outcome.reason in ("ended", "gone", "erased"):
            self._end(outcome.reason)
        return outcome


def run(
    job: Job,
    worker: Callable[[Job], Any],
    fail_message: str = "The job failed.",
    on_error: Optional[Callable[[BaseException], None]] = None,
) -> Optional[Outcome]:
    """Runs ``worker(job)`` and posts its return value as the result, or a failure if it raises (a JobError's
    message; any other error becomes ``fail_message``, since its text may hold what the person should not
    read). Posts nothing once the job is over (cancelled, timed out): then returns None."""
    try:
        value = worker(job)
    except Exception as error:  # noqa: BLE001 - every failure of the worker is the job's failure
        if job.over:
            return None
        if on_error:
            on_error(error)
        return job.fail(str(error) if isinstance(error, JobError) else fail_message)
    if job.over:
        return None
    return job.result(value)


def run_in_thread(job: Job, worker: Callable[[Job], Any], **options: Any) -> threading.Thread:
    """``run`` on a thread of its own (work that must survive a restart belongs on your queue instead)."""
    thread = threading.Thread(target=run, args=(job, worker), kwargs=options, daemon=True)
    thread.start()
    return thread


def _refusal(message: str, field_name: str):
    from flask import jsonify

    body = {"error": {"code": "missing_job_headers", "message": message, "details": [{"field": field_name, "message": message}]}}
    return jsonify(body), 400


def async_tool(
    hub_url: Any = None,
    retry: Optional[RetryPolicy] = None,
    on_retry: Optional[Callable[[dict], None]] = None,
):
    """Decorates a Flask view that starts a job. The view gets the ``Job`` (plus the route's arguments) and
    returns the accept message (a string or ``{"message": …}``); the decorator answers 202 with it, or 400
    without the hub's headers. A view that returns a Flask response (a result at once) is answered as is.
    ``hub_url`` (a URL, a list, or a function giving one): callback URLs not under ``<hub_url>/callbacks/``
    are refused, so that the endpoint never posts to a URL someone else chose. Recommended."""

    def decorate(view):
        @functools.wraps(view)
        def wrapper(*args, **kwargs):
            from flask import Response, jsonify, request
            from urllib.parse import urlparse

            job_id = request.headers.get(JOB_ID)
            callback_url = request.headers.get(CALLBACK_URL)
            if not job_id:
                return _refusal(f"{JOB_ID} is missing: this endpoint starts a job, and the hub names it", JOB_ID)
            if not callback_url or urlparse(callback_url).scheme not in ("http", "https"):
                return _refusal(f"{CALLBACK_URL} is missing or not an http(s) URL", CALLBACK_URL)
            allowed = hub_url() if callable(hub_url) else hub_url
            if allowed is not None:
                prefixes = [f"{url.rstrip('/')}/callbacks/" for url in ([allowed] if isinstance(allowed, str) else allowed)]
                if not any(callback_url.startswith(prefix) for prefix in prefixes):
                    return _refusal(f"{CALLBACK_URL} does not point to the hub", CALLBACK_URL)
            job = Job(id=job_id, callback_url=callback_url, retry=retry, on_retry=on_retry)
            answer = view(job, *args, **kwargs)
            if isinstance(answer, (Response, tuple)):
                status = answer.status_code if isinstance(answer, Response) else (answer[1] if len(answer) > 1 else 200)
                if status != 202:
                    job.cancel()  # answered at once (a result, not a job): nothing of it is held here
                return answer
            message = answer if isinstance(answer, str) else (answer or {}).get("message")
            return jsonify({} if message is None else {"message": message}), 202

        return wrapper

    return decorate


def cancel_handler(view=None):
    """Decorates the Flask view of the tool's cancel endpoint (``async.cancel`` in its file). The job id is
    X-Vatio-Job-Id (the hub always sends it). A job this process holds gets ``cancelled`` set; the view, called
    with the job id, stops the work elsewhere and returns False when it never knew the job. Answers 200, 404
    for an unknown job (the hub does not retry), or 503 when the view raises (the hub retries)."""

    def decorate(inner):
        @functools.wraps(inner)
        def wrapper(*args, **kwargs):
            from flask import jsonify, request

            job_id = request.headers.get(JOB_ID) or kwargs.get("job_id") or kwargs.get("id")
            if not job_id:
                return _refusal(f"{JOB_ID} is missing: the hub names the job it calls off", JOB_ID)
            job = held_job(job_id)
            if job:
                job.cancel()
            known = job is not None
            try:
                if inner(job_id) is not False:
                    known = True
            except Exception:  # noqa: BLE001 - the hub retries a 5xx
                return jsonify({"error": {"code": "unavailable", "message": "the job could not be called off yet"}}), 503
            if not known:
                return jsonify({"error": {"code": "not_found", "message": "no such job"}}), 404
            return jsonify({"result": "ok", "message": "Cancelled"})

        return wrapper

    if view is not None:
        return decorate(view)
    return decorate
