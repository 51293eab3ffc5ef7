#!/usr/bin/python3
# A widget client on python-socketio (Debian's python3-socketio 5.7 with python3-websocket: Engine.IO v4,
# Socket.IO v5, the WebSocket transport), written from docs/widget-protocol.md alone: every handler takes the
# one argument the document says an event carries, the ack of a `message` is the handler's return value, and
# reconnecting is the document's loop for Python. test/widget-protocol-python.test.ts drives it over
# stdin/stdout, one JSON object a line.
#
# Commands (stdin):
#   {"cmd": "open", "hub": URL, "token": T, "lastMessageId"?: ID, "ack"?: "ok" | "nothing", "crashOnHistory"?: false,
#    "maxDelay"?: seconds, "readOnMessage"?: false}
#                                      connect, and reconnect after any disconnect until "close"; with
#                                      readOnMessage, each `message` is acked and read at once (chat on screen)
#   {"cmd": "send", "text": S, "clientId": C}   via the outbox: retried after each history until it has an id
#   {"cmd": "read"}                    a read receipt up to the newest message
#   {"cmd": "wrong-namespace", "hub": URL, "token": T}   connects the way io("https://hub/widget") does not carry over
#   {"cmd": "close"}
# Reports (stdout): {"event": ..., ...} — connect, disconnect, connect_error, connect_failed, history, message,
#   progress, typing, job, received, sent, read, wrong-namespace, exception (anything raised in a handler), closed.
import json
import logging
import random
import sys
import threading
import time

import socketio

NAMESPACE = "/widget"
ACK_TIMEOUT = 5

_out = threading.Lock()


def report(event, **fields):
    with _out:
        sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
        sys.stdout.flush()


# A handler that cannot take what arrives raises on python-socketio's thread, where nothing would show it:
# report it, so that a test fails on it.
threading.excepthook = lambda hook: report(
    "exception", error=repr(hook.exc_value), thread=hook.thread.name if hook.thread else None
)


class ReportErrors(logging.Handler):
    def emit(self, record):
        if record.exc_info:
            report("exception", error=repr(record.exc_info[1]), where=record.getMessage())


for name in ("socketio", "engineio", "socketio.client", "engineio.client"):
    logging.getLogger(name).addHandler(ReportErrors())


class HandlerCrash(Exception):
    """A handler failing on what it was given (reported as an exception like any other)."""


class Widget:
    def __init__(self, command):
        self.hub = command["hub"]
        self.token = command["token"]
        self.cursor = None  # {id, createdAt} of the newest message the hub sent
        if command.get("lastMessageId"):
            self.cursor = {"id": command["lastMessageId"], "createdAt": ""}
        self.ack = command.get("ack", "ok")
        self.crash_on_history = command.get("crashOnHistory", False)
        self.max_delay = command.get("maxDelay", 60)
        self.read_on_message = command.get("readOnMessage", False)
        self.shown = {}  # id -> message: history and live events overlap, the id deduplicates
        self.outbox = {}  # clientId -> text, until the hub answers with an id
        self.closing = threading.Event()
        self.sio = socketio.Client(reconnection=False)
        self.sio.on("connect", self.on_connect, namespace=NAMESPACE)
        self.sio.on("disconnect", self.on_disconnect, namespace=NAMESPACE)
        self.sio.on("connect_error", self.on_connect_error, namespace=NAMESPACE)
        self.sio.on("history", self.on_history, namespace=NAMESPACE)
        self.sio.on("message", self.on_message, namespace=NAMESPACE)
        self.sio.on("progress", lambda progress: report("progress", progress=progress), namespace=NAMESPACE)
        self.sio.on("typing", lambda payload: report("typing", typing=payload["typing"]), namespace=NAMESPACE)
        self.sio.on("job", lambda job: report("job", job=job), namespace=NAMESPACE)
        threading.Thread(target=self.run, name="connection", daemon=True).start()

    def auth(self):
        # Called on every (re)connection: it carries the newest message id we have.
        if self.cursor:
            return {"token": self.token, "lastMessageId": self.cursor["id"]}
        return {"token": self.token}

    def run(self):
        delay = 1
        while not self.closing.is_set():
            try:
                self.sio.connect(self.hub, namespaces=[NAMESPACE], transports=["websocket"], auth=self.auth)
            except socketio.exceptions.ConnectionError as error:
                report("connect_failed", error=str(error))
            else:
                delay = 1
                self.sio.wait()  # until this connection ends, whatever ended it
            if self.closing.wait(delay * (0.5 + random.random())):
                break
            delay = min(delay * 2, self.max_delay)

    def on_connect(self):
        report("connect")

    def on_disconnect(self):
        report("disconnect")

    def on_connect_error(self, data):
        report("connect_error", data=data)

    def advance(self, message):
        if self.cursor and message["createdAt"] < self.cursor["createdAt"]:
            return
        self.cursor = {"id": message["id"], "createdAt": message["createdAt"]}

    def show(self, message):
        if message["id"] in self.shown:
            return
        self.shown[message["id"]] = message
        self.outbox.pop(message.get("clientId") or "", None)

    def on_history(self, history):
        if self.crash_on_history:
            raise HandlerCrash("the app failed to show the history")
        if history.get("reset"):
            self.shown.clear()
            self.cursor = None
        for message in history["messages"]:
            self.show(message)
            self.advance(message)
        report(
            "history",
            messages=history["messages"],
            jobs=history.get("jobs"),
            reset=history.get("reset", False),
        )
        messages = history["messages"]
        # Shown: now the hub may count them as delivered.
        if messages:
            up_to = messages[-1]["id"]
            self.sio.emit(
                "received",
                {"upTo": up_to},
                namespace=NAMESPACE,
                callback=lambda answer: report("received", upTo=up_to, answer=answer),
            )
        for client_id, text in list(self.outbox.items()):
            self.transmit(client_id, text)

    def on_message(self, message):
        self.show(message)
        self.advance(message)
        report("message", message=message)
        if self.read_on_message:
            # The chat is on screen: the receipt goes out at once, racing the ack this handler returns.
            threading.Thread(target=self.read, name="read", daemon=True).start()
        if self.ack == "ok":
            return {"ok": True}
        return None  # python-socketio still acks, with no value

    def transmit(self, client_id, text):
        def attempt():
            try:
                answer = self.sio.call(
                    "send", {"text": text, "clientId": client_id}, namespace=NAMESPACE, timeout=ACK_TIMEOUT
                )
            except (socketio.exceptions.TimeoutError, socketio.exceptions.BadNamespaceError) as error:
                report("sent", clientId=client_id, answer=None, error=type(error).__name__)
                return
            if isinstance(answer, dict) and "id" in answer:
                self.outbox.pop(client_id, None)
            elif isinstance(answer, dict) and answer.get("error", {}).get("code") == "invalid_request":
                self.outbox.pop(client_id, None)
            report("sent", clientId=client_id, answer=answer)

        threading.Thread(target=attempt, name="send", daemon=True).start()

    def send(self, text, client_id):
        self.outbox[client_id] = text
        if self.sio.connected:
            self.transmit(client_id, text)

    def read(self):
        up_to = self.cursor["id"] if self.cursor else None
        try:
            answer = self.sio.call("read", {"upTo": up_to}, namespace=NAMESPACE, timeout=ACK_TIMEOUT)
        except (socketio.exceptions.TimeoutError, socketio.exceptions.BadNamespaceError) as error:
            report("read", upTo=up_to, answer=None, error=type(error).__name__)
            return
        report("read", upTo=up_to, answer=answer)

    def close(self):
        self.closing.set()
        if self.sio.connected:
            self.sio.disconnect()


def wrong_namespace(command):
    """What `socketio.Client().connect("https://hub/widget")` does: the path is dropped, the namespace is `/`."""
    probe = socketio.Client(reconnection=False)
    refusals = []
    probe.on("connect_error", lambda data: refusals.append(data))
    probe.on("history", lambda history: report("exception", error="a history on the default namespace"))
    try:
        probe.connect(command["hub"] + "/widget", auth={"token": command["token"]}, transports=["websocket"])
    except socketio.exceptions.ConnectionError as error:
        report("wrong-namespace", connected=False, error=str(error), refusals=refusals)
        return
    report("wrong-namespace", connected=True, namespaces=list(probe.namespaces), refusals=refusals)
    probe.disconnect()


def main():
    widget = None
    for line in sys.stdin:
        if not line.strip():
            continue
        command = json.loads(line)
        name = command["cmd"]
        if name == "open":
            widget = Widget(command)
        elif name == "send":
            widget.send(command["text"], command["clientId"])
        elif name == "read":
            threading.Thread(target=widget.read, name="read", daemon=True).start()
        elif name == "wrong-namespace":
            wrong_namespace(command)
        elif name == "close":
            break
    if widget:
        widget.close()
    report("closed")


if __name__ == "__main__":
    main()
