"""A real SMTP server (aiosmtpd, Debian's python3-aiosmtpd) standing in for the hub's SMTP relay in tests.

Usage: smtp_capture.py PORT DIR USER PASSWORD
Takes AUTH PLAIN/LOGIN with USER and PASSWORD only (refusing the rest with 535), then appends each e-mail it
accepts to DIR/mail.jsonl as {"from", "to", "data"}. While DIR/answer exists, its first line is the answer to
every DATA instead ("550 5.1.1 mailbox unavailable"), and nothing is kept. Prints "ready" once it listens.
"""
import json
import os
import sys
import time

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

port, folder, user, password = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = auth_data.login == user.encode() and auth_data.password == password.encode()
    return AuthResult(success=ok, handled=False)


class Capture:
    async def handle_DATA(self, server, session, envelope):
        answer_file = os.path.join(folder, "answer")
        if os.path.exists(answer_file):
            with open(answer_file) as f:
                return f.readline().strip()
        record = {
            "from": envelope.mail_from,
            "to": envelope.rcpt_tos,
            "data": envelope.content.decode("utf8", errors="replace"),
        }
        with open(os.path.join(folder, "mail.jsonl"), "a") as f:
            f.write(json.dumps(record) + "\n")
        return "250 2.0.0 queued"


controller = Controller(
    Capture(),
    hostname="127.0.0.1",
    port=port,
    authenticator=authenticator,
    auth_required=True,
    auth_require_tls=False,
)
controller.start()
print("ready", flush=True)
try:
    while True:
        time.sleep(3600)
except KeyboardInterrupt:
    pass
finally:
    controller.stop()
