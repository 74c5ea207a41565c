#!/usr/bin/env python3
"""A fault-injecting HTTP proxy for the sync tests: listens on 127.0.0.1 (port printed on the first line
of stdout), forwards each request to UPSTREAM, and misbehaves on a schedule.

    fault-proxy.py UPSTREAM SCHEDULE

SCHEDULE is a comma-separated cycle of what to do with request 1, 2, 3...: `ok` (forward), `drop`
(forward, then close the connection without an answer: the server did the work), `refuse` (close
without forwarding), `429` (answer 429 with Retry-After: 1, no forwarding), `500` (answer 500, no
forwarding), `truncate` (forward, then send the answer's headers and half its body), `delay` (forward
after 2 s), `huge` (answer 200 with a Content-Length of 4 GB, then a megabyte of its body every tenth of
a second, for at most 60 s), `bloat` (the same without a Content-Length: a body that only grows),
`silent` (read the request and never answer, for at most 120 s), `trickle` (forward, then send the answer
10 bytes a second), `relabel` (forward, and in a searchset give every other entry's resource the type
Patient). GET /_proxy/stats answers the counts of what was done.
"""
import http.client
import http.server
import json
import sys
import threading
import time
import urllib.parse

upstream = urllib.parse.urlsplit(sys.argv[1])
schedule = sys.argv[2].split(",")
lock = threading.Lock()
counter = {"requests": 0}
stats = {}


def next_action():
    with lock:
        action = schedule[counter["requests"] % len(schedule)]
        counter["requests"] += 1
        stats[action] = stats.get(action, 0) + 1
        return action


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def forward(self):
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length) if length else None
        connection = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        connection.request(self.command, self.path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        result = (response.status, [(k, v) for k, v in response.getheaders() if k.lower() not in ("transfer-encoding", "connection", "content-length")], data)
        connection.close()
        return result

    def answer(self, status, headers, data):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        if self.path == "/_proxy/stats":
            return self.answer(200, [("Content-Type", "application/json")], json.dumps(stats).encode())
        action = next_action()
        if action == "refuse":
            self.close_connection = True
            return
        if action in ("429", "500"):
            length = int(self.headers.get("Content-Length", 0))
            if length:
                self.rfile.read(length)
            outcome = json.dumps({"resourceType": "OperationOutcome", "issue": [{"severity": "error", "code": "transient", "diagnostics": "proxy says " + action}]}).encode()
            headers = [("Content-Type", "application/fhir+json")] + ([("Retry-After", "1")] if action == "429" else [])
            return self.answer(int(action), headers, outcome)
        if action == "delay":
            time.sleep(2)
        if action in ("huge", "bloat", "silent"):
            length = int(self.headers.get("Content-Length", 0))
            if length:
                self.rfile.read(length)
            self.close_connection = True
            if action == "silent":
                time.sleep(120)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/fhir+json")
            if action == "huge":
                self.send_header("Content-Length", str(4 << 30))
            self.end_headers()
            chunk = b" " * (1 << 20)
            try:
                for _ in range(600):
                    self.wfile.write(chunk)
                    time.sleep(0.1)
            except OSError:
                pass
            return
        status, headers, data = self.forward()
        if action == "relabel":
            try:
                bundle = json.loads(data)
                for position, entry in enumerate(bundle.get("entry", [])):
                    if position % 2 == 0 and "resource" in entry:
                        entry["resource"]["resourceType"] = "Patient"
                data = json.dumps(bundle).encode()
            except ValueError:
                pass
        if action == "trickle":
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            try:
                for start in range(0, min(len(data), 1200), 10):
                    self.wfile.write(data[start:start + 10])
                    self.wfile.flush()
                    time.sleep(1)
            except OSError:
                pass
            self.close_connection = True
            return
        if action == "drop":
            self.close_connection = True
            return
        if action == "truncate":
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.close_connection = True
            return
        self.answer(status, headers, data)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_any

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
print(server.server_address[1], flush=True)
server.serve_forever()
