"""A tool backend written with python/vatio_backend.py (Flask), for the hub-restart scenario. Its worker
holds each job until the test releases it; /test/* lets the test steer and read it. Prints its port."""

import json
import logging
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from flask import Flask, jsonify, request  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

from vatio_backend import RetryPolicy, async_tool, run  # noqa: E402

app = Flask(__name__)
state = {"hub_url": "", "accepted": [], "retries": {}, "outcomes": {}}
gates = {}
results = {}
lock = threading.Lock()


def count_retry(job_id):
    def counted(_event):
        with lock:
            state["retries"][job_id] = state["retries"].get(job_id, 0) + 1

    return counted


@app.post("/vatio/match")
@async_tool(hub_url=lambda: state["hub_url"], retry=RetryPolicy(initial_delay=0.2, max_delay=1.0, max_elapsed=60.0))
def match(job):
    job.on_retry = count_retry(job.id)
    gates[job.id] = threading.Event()
    state["accepted"].append(job.id)

    def worker(job):
        gates[job.id].wait()  # the slow part, until the test lets it return
        return results[job.id]

    def run_and_record():

        outcome = run(job, worker)
        with lock:
            state["outcomes"][job.id] = None if outcome is None else {
                "ok": outcome.ok,
                "duplicate": outcome.duplicate,
                "attempts": outcome.attempts,
                "reason": outcome.reason,
            }

    threading.Thread(target=run_and_record, daemon=True).start()
    return "Finding matches; this usually takes about two minutes."


@app.post("/test/hub-url")
def set_hub_url():
    state["hub_url"] = request.get_json()["url"]
    return jsonify({})


@app.post("/test/release/<job_id>")
def release(job_id):
    results[job_id] = request.get_json()
    gates[job_id].set()
    return jsonify({})


@app.get("/test/state")
def read_state():
    with lock:
        return jsonify(state)


if __name__ == "__main__":
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    print(json.dumps({"port": server.server_port}), flush=True)
    server.serve_forever()
