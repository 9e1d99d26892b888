"""A loopback OTLP/HTTP trace receiver for tests: what a collector's `otlp` receiver does with
`POST /v1/traces` (protobuf ExportTraceServiceRequest), keeping each request, on 127.0.0.1:0.

`as_json()` gives what was received as OTLP/JSON (the protobuf JSON mapping a collector's file
exporter writes), which is what `mcptape import` reads.
"""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


class OtlpReceiver:
    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.requests.append(request)
                receiver.paths.append(self.path)
                receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                data = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def spans(self) -> list[dict[str, Any]]:
        """Every span received, as OTLP/JSON dicts, with its resource's attributes under `resource`."""
        out = []
        for doc in self.as_json():
            for rs in doc.get("resourceSpans", []):
                resource = attributes(rs.get("resource", {}))
                for ss in rs.get("scopeSpans", []):
                    for span in ss.get("spans", []):
                        out.append({**span, "resource": resource, "attrs": attributes(span)})
        return out

    def as_json(self) -> list[dict[str, Any]]:
        return [MessageToDict(r) for r in self.requests]


def attributes(node: dict[str, Any]) -> dict[str, Any]:
    """An OTLP/JSON attribute list as a dict of plain values."""
    out: dict[str, Any] = {}
    for item in node.get("attributes", []):
        value = item.get("value", {})
        for kind in ("stringValue", "intValue", "boolValue", "doubleValue"):
            if kind in value:
                out[item["key"]] = int(value[kind]) if kind == "intValue" else value[kind]
    return out
