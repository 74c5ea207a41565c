#!/usr/bin/env python3
"""A hostile HTTP server for the tests of bounded reading and redirects: listens on 127.0.0.1 (port
printed on the first line of stdout) and answers by the first segment of the path.

    hostile-server.py [--seconds S] [--bytes B] [--root DIR]

    /endless/...        200, chunked, a body of spaces that never ends (no Content-Length)
    /lying/...          200, Content-Length of 4 GiB, then streams a body of spaces
    /after-hangup/...   as /endless, but every failed write (the client hung up) is tried again, so the
                        server keeps sending for as long as the socket lets it
    /gzip-bomb/...      200, Content-Encoding gzip, chunked: the gzip of endless zeros (1000:1 or more)
    /redirect/CODE/SCHEME/HOST/PORT/REST
                        answers CODE with Location SCHEME://HOST:PORT/REST (the query kept)
    /fhir/...           a FHIR answer: a CapabilityStatement for .../metadata, else an empty searchset
    /files/REST         the file REST under --root (404 when absent)
    /_stats             JSON: one record per request (path, method, bytes the kernel accepted, whether
                        an Authorization header came, the status sent; for a stream, its failed writes
                        and whether it ended)

Every stream stops after --seconds (default 8) or --bytes (default 1 GiB), whichever comes first, so
that a client that does not hang up costs bounded time and memory.
"""
import argparse
import http.server
import json
import os
import threading
import time
import zlib

parser = argparse.ArgumentParser()
parser.add_argument("--seconds", type=float, default=8)
parser.add_argument("--bytes", type=int, default=1 << 30)
parser.add_argument("--root", default=None)
options = parser.parse_args()

lock = threading.Lock()
records = []
CHUNK = 256 * 1024


class Hostile(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def record(self, **fields):
        entry = {"path": self.path, "method": self.command, "authorization": "Authorization" in self.headers}
        entry.update(fields)
        with lock:
            records.append(entry)
        return entry

    def plain(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.record(status=status, bytes=len(body))

    def stream(self, chunks, chunked, headers, retry_after_error=False):
        """Sends the head, then `chunks` (an iterator of bytes) until the time or byte bound; returns
        the bytes the kernel accepted."""
        self.close_connection = True
        self.send_response(200)
        for name, value in headers:
            self.send_header(name, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        sent, failures = 0, 0
        end = time.monotonic() + options.seconds
        entry = self.record(status=200, bytes=0, failedWrites=0)
        for data in chunks:
            if time.monotonic() > end or sent >= options.bytes:
                break
            frame = (b"%x\r\n" % len(data)) + data + b"\r\n" if chunked else data
            try:
                self.connection.sendall(frame)
                sent += len(data)
            except OSError:
                failures += 1
                if not retry_after_error:
                    with lock:
                        entry["failedWrites"] = failures
                    break
                time.sleep(0.01)
            with lock:
                entry["bytes"], entry["failedWrites"] = sent, failures
        with lock:
            entry["done"] = True
        return sent

    def do_any(self):
        path = self.path.split("?")[0]
        parts = path.strip("/").split("/")
        length = int(self.headers.get("Content-Length", 0) or 0)
        if length:
            self.rfile.read(min(length, 1 << 20))
        mode = parts[0] if parts else ""
        spaces = b" " * CHUNK
        if mode == "_stats":
            with lock:
                body = json.dumps(records).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if mode in ("endless", "after-hangup"):
            forever = iter(lambda: spaces, None)
            self.stream(forever, True, [("Content-Type", "application/fhir+json")], retry_after_error=(mode == "after-hangup"))
            return
        if mode == "lying":
            self.stream(iter(lambda: spaces, None), False, [("Content-Type", "application/fhir+json"), ("Content-Length", str(4 << 30))])
            return
        if mode == "gzip-bomb":
            def bomb():
                # After the first block the window holds only zeros, so every later block of 4 MiB of
                # zeros compresses to the same few kilobytes: computed once, sent again and again.
                compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
                zeros = b"\0" * (4 << 20)
                yield compressor.compress(zeros) + compressor.flush(zlib.Z_SYNC_FLUSH)
                block = compressor.compress(zeros) + compressor.flush(zlib.Z_SYNC_FLUSH)
                while True:
                    yield block
            self.stream(bomb(), True, [("Content-Type", "application/fhir+json"), ("Content-Encoding", "gzip")])
            return
        if mode == "redirect" and len(parts) >= 5:
            code, scheme, host, port = parts[1:5]
            rest = "/".join(parts[5:])
            query = ("?" + self.path.split("?", 1)[1]) if "?" in self.path else ""
            self.plain(int(code), b"", [("Location", "%s://%s:%s/%s%s" % (scheme, host, port, rest, query))])
            return
        if mode == "fhir":
            if parts[-1] == "metadata":
                resource = {"resourceType": "CapabilityStatement", "status": "active", "kind": "instance", "fhirVersion": "4.0.1", "format": ["json"], "date": "2024-01-01"}
            else:
                resource = {"resourceType": "Bundle", "type": "searchset", "total": 0}
            self.plain(200, json.dumps(resource).encode(), [("Content-Type", "application/fhir+json")])
            return
        if mode == "files" and options.root:
            root = os.path.realpath(options.root)
            file = os.path.realpath(os.path.join(root, *parts[1:]))
            if file.startswith(root + os.sep) and os.path.isfile(file):
                with open(file, "rb") as handle:
                    self.plain(200, handle.read(), [("Content-Type", "application/json")])
                return
        self.plain(404, b"not here")

    do_GET = do_POST = do_PUT = do_DELETE = do_any

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
