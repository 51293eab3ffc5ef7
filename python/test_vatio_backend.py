"""Tests of vatio_backend over real HTTP: a local server answers callbacks as the hub can, and a Flask app
built with the module is served on a port of its own. Run: python3 -m unittest python/test_vatio_backend.py"""

import json
import logging
import os
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import vatio_backend  # noqa: E402
from vatio_backend import Job, JobError, RetryPolicy, async_tool, cancel_handler, run  # noqa: E402

FAST = RetryPolicy(initial_delay=0.02, max_delay=0.1, max_elapsed=5.0, attempt_timeout=5.0)


class FakeHub:
    """Each path answers from its script ({"status", "body", "headers"} or "drop"), then 200 {"ok": true}."""

    def __init__(self):
        self.scripts = {}
        self.received = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hub.received.append((self.path, json.loads(raw) if raw else None, time.monotonic()))
                script = hub.scripts.get(self.path) or []
                answer = script.pop(0) if script else {"status": 200, "body": {"ok": True}}
                if answer == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.send_response(answer["status"])
                self.send_header("Content-Type", "application/json")
                for name, value in (answer.get("headers") or {}).items():
                    self.send_header(name, value)
                data = json.dumps(answer.get("body", {})).encode()
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def job(self, name, answers=(), retries=None):
        self.scripts[f"/callbacks/{name}"] = list(answers)
        return Job(id=name, callback_url=f"{self.url}/callbacks/{name}", retry=FAST, on_retry=(retries.append if retries is not None else None))

    def posts(self, name):
        return [entry for entry in self.received if entry[0] == f"/callbacks/{name}"]


class CallbackTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hub = FakeHub()

    @classmethod
    def tearDownClass(cls):
        cls.hub.server.shutdown()

    def test_retries_503_and_a_dropped_connection(self):
        retries = []
        job = self.hub.job("flaky", [{"status": 503, "body": {}}, "drop"], retries)
        outcome = job.result({"message": "2 found", "data": {"therapists": ["Ana"]}})
        self.assertTrue(outcome.ok)
        self.assertEqual(outcome.attempts, 3)
        self.assertFalse(outcome.duplicate)
        self.assertEqual(retries[0]["reason"], "the hub answered 503")
        self.assertTrue(retries[1]["reason"].startswith("no answer"))
        bodies = [body for _, body, _ in self.hub.posts("flaky")]
        self.assertEqual(bodies, [{"result": "ok", "message": "2 found", "data": {"therapists": ["Ana"]}}] * 3)
        self.assertEqual(job.over, "finished")

    def test_honours_retry_after(self):
        job = self.hub.job("busy", [{"status": 429, "headers": {"Retry-After": "1"}, "body": {}}])
        outcome = job.progress("Reviewing 12 therapists", notify=True)
        self.assertTrue(outcome.ok)
        first, second = self.hub.posts("busy")
        self.assertEqual(first[1], {"progress": "Reviewing 12 therapists", "notify": True})
        # The policy's own first wait is 10-20 ms; the hub asked for a second.
        self.assertGreaterEqual(second[2] - first[2], 1.0)

    def test_stops_on_409_and_410(self):
        ended = self.hub.job("ended", [{"status": 409, "body": {"error": {"code": "job_ended"}}}])
        outcome = ended.result("too late")
        self.assertEqual((outcome.ok, outcome.reason, outcome.status, outcome.attempts), (False, "ended", 409, 1))
        self.assertTrue(ended.cancelled.is_set())
        erased = self.hub.job("erased", [{"status": 410, "body": {"error": {"code": "erased"}}}])
        outcome = erased.fail("no supplier")
        self.assertEqual((outcome.reason, outcome.attempts), ("erased", 1))
        self.assertEqual(self.hub.posts("erased")[0][1], {"result": "error", "message": "no supplier"})

    def test_duplicate_is_success_and_giving_up_is_an_outcome(self):
        again = self.hub.job("again", [{"status": 200, "body": {"ok": True, "duplicate": True}}])
        outcome = again.result("same")
        self.assertTrue(outcome.ok and outcome.duplicate)
        self.hub.scripts["/callbacks/down"] = [{"status": 502}] * 50
        down = Job(id="down", callback_url=f"{self.hub.url}/callbacks/down", retry=RetryPolicy(0.05, 0.1, 0.3, 5.0))
        outcome = down.result("never")
        self.assertEqual((outcome.ok, outcome.reason, outcome.status), (False, "gave_up", 502))
        self.assertGreater(len(self.hub.posts("down")), 1)

    def test_run_posts_the_value_or_fails_the_job(self):
        def worker(job):
            job.progress("halfway")
            return {"message": "done", "data": {"n": 1}}

        run(self.hub.job("run-ok"), worker)
        self.assertEqual(
            [body for _, body, _ in self.hub.posts("run-ok")],
            [{"progress": "halfway"}, {"result": "ok", "message": "done", "data": {"n": 1}}],
        )
        errors = []

        def broken(job):
            raise RuntimeError("db password wrong at 10.0.0.3")

        run(self.hub.job("run-throws"), broken, on_error=errors.append)
        self.assertEqual([body for _, body, _ in self.hub.posts("run-throws")], [{"result": "error", "message": "The job failed."}])
        self.assertEqual(len(errors), 1)

        def told(job):
            raise JobError("The supplier did not answer")

        run(self.hub.job("run-job-error"), told)
        self.assertEqual(
            [body for _, body, _ in self.hub.posts("run-job-error")],
            [{"result": "error", "message": "The supplier did not answer"}],
        )


class FlaskTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from flask import Flask, jsonify, request
        from werkzeug.serving import make_server

        cls.hub = FakeHub()
        cls.accepted = []
        cls.cancelled_here = []
        app = Flask(__name__)

        @app.post("/vatio/match")
        @async_tool(hub_url=lambda: cls.hub.url)
        def match(job):
            cls.accepted.append(job)
            if (request.get_json(silent=True) or {}).get("cached"):
                return jsonify({"result": "ok", "message": "cached"}), 200
            return "Finding matches; this usually takes about two minutes."

        @app.delete("/vatio/jobs/<job_id>")
        @cancel_handler
        def cancel(job_id):
            cls.cancelled_here.append(job_id)
            return job_id.startswith("known")

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        cls.server = make_server("127.0.0.1", 0, app, threaded=True)
        cls.url = f"http://127.0.0.1:{cls.server.server_port}"
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.hub.server.shutdown()

    def call(self, method, path, headers, body=None):
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, data=json.dumps(body or {}).encode(), headers={"Content-Type": "application/json", **headers}
        )
        try:
            with urllib.request.urlopen(request) as res:
                return res.status, json.loads(res.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def test_accept(self):
        callback = f"{self.hub.url}/callbacks/accepted"
        status, body = self.call("POST", "/vatio/match", {"X-Vatio-Callback-Url": callback})
        self.assertEqual((status, body["error"]["details"][0]["field"]), (400, "X-Vatio-Job-Id"))
        status, body = self.call("POST", "/vatio/match", {"X-Vatio-Job-Id": "j1"})
        self.assertEqual((status, body["error"]["details"][0]["field"]), (400, "X-Vatio-Callback-Url"))
        status, body = self.call("POST", "/vatio/match", {"X-Vatio-Job-Id": "j1", "X-Vatio-Callback-Url": "http://127.0.0.1:1/callbacks/x"})
        self.assertEqual(status, 400)
        self.assertIn("does not point to the hub", body["error"]["message"])
        self.assertEqual(self.accepted, [])
        status, body = self.call("POST", "/vatio/match", {"X-Vatio-Job-Id": "j1", "X-Vatio-Callback-Url": callback})
        self.assertEqual((status, body), (202, {"message": "Finding matches; this usually takes about two minutes."}))
        self.assertEqual(self.accepted[0].to_dict(), {"id": "j1", "callback_url": callback})
        self.assertNotIn("callbacks", repr(self.accepted[0]))
        status, body = self.call("POST", "/vatio/match", {"X-Vatio-Job-Id": "j2", "X-Vatio-Callback-Url": callback}, {"cached": True})
        self.assertEqual((status, body), (200, {"result": "ok", "message": "cached"}))
        # Answered at once: no job is held for it.
        self.assertIsNone(vatio_backend.held_job("j2"))

    def test_cancel(self):
        job = self.hub.job("known-1")
        status, body = self.call("DELETE", "/vatio/jobs/known-1", {"X-Vatio-Job-Id": "known-1"})
        self.assertEqual((status, body), (200, {"result": "ok", "message": "Cancelled"}))
        self.assertTrue(job.cancelled.is_set())
        self.assertEqual(job.over, "cancelled")
        self.assertIsNone(run(job, lambda job: "late"))
        self.assertEqual(self.hub.posts("known-1"), [])
        status, _ = self.call("DELETE", "/vatio/jobs/never-heard-of", {"X-Vatio-Job-Id": "never-heard-of"})
        self.assertEqual(status, 404)
        self.assertEqual(self.cancelled_here, ["known-1", "never-heard-of"])
        self.assertIsNone(vatio_backend.held_job("known-1"))


if __name__ == "__main__":
    unittest.main()
