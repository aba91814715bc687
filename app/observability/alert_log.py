"""`calmon alert-log`: the receiver the compose file's Alertmanager notifies out of the box.

An Alertmanager whose webhooks point at a host that does not exist drops every notification
and says so only in its own log. This receiver exists: it takes Alertmanager's webhook
(``POST``, JSON, version 4) and writes one structured log line per alert (``docker compose logs
alert-log``), the path naming the route (``/page``, ``/ticket``, ``/info``). It is the example
to replace: config/alertmanager/alertmanager.yml shows the pager and chat receivers that take
its place. It keeps nothing and answers 200 to every notification it could read.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any

logger = logging.getLogger("calmon.alerts")

DEFAULT_PORT = 9095
# Alertmanager batches a group's alerts in one notification; even a large group is well
# under this, and an endless body must not fill the memory of a process nobody watches.
_MAX_BODY_BYTES = 4 * 1024 * 1024
# The labels calmon's rules set (config/prometheus/rules/calmon-alerts.yml), logged by name.
_LABELS = ("alertname", "severity", "trigger", "model", "segment")


class _Receiver(BaseHTTPRequestHandler):
    server_version = "calmon-alert-log"

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY_BYTES:
            self._answer(413)
            return
        try:
            notification = json.loads(self.rfile.read(length))
            alerts = notification["alerts"]
            for alert in alerts:
                _log(self.path, notification, alert)
        except (ValueError, KeyError, TypeError, AttributeError):
            logger.warning("alert_notification_unreadable", extra={"route": self.path})
            self._answer(400)
            return
        self._answer(200)

    def do_GET(self) -> None:
        """``/healthz`` for the container's healthcheck."""
        self._answer(200 if self.path == "/healthz" else 404)

    def _answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the alerts' own lines are the log, not one line per request."""


def _log(route: str, notification: dict[str, Any], alert: dict[str, Any]) -> None:
    labels: dict[str, Any] = alert.get("labels") or {}
    annotations: dict[str, Any] = alert.get("annotations") or {}
    logger.warning(
        "alert_" + str(alert.get("status", "firing")),
        extra={
            "route": route,
            "receiver": notification.get("receiver"),
            **{name: labels[name] for name in _LABELS if name in labels},
            "summary": annotations.get("summary"),
            "starts_at": alert.get("startsAt"),
        },
    )


def serve_alert_log(host: str, port: int) -> int:
    """Receive notifications on ``host:port`` until SIGTERM or SIGINT; returns 0."""
    server = ThreadingHTTPServer((host, port), _Receiver)
    stopping = threading.Event()

    def _stop(_signum: int, _frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    # Served from a thread: shutdown() waits for serve_forever, so it cannot run in its thread.
    threading.Thread(target=server.serve_forever, name="alert-log", daemon=True).start()
    logger.info("alert_log_listening", extra={"host": host, "port": port})
    stopping.wait()
    server.shutdown()
    server.server_close()
    return 0


def add_alert_log(subparsers: Any) -> None:
    """Register `calmon alert-log`."""
    parser = subparsers.add_parser(
        "alert-log",
        help="receive Alertmanager's webhook notifications and log each alert (an example "
        "receiver)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.set_defaults(handler=lambda args, _settings: serve_alert_log(args.host, args.port))
