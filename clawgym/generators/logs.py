"""`log_lines`: application, syslog, nginx access or JSON-lines logs with injected incidents."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from ..errors import ClawgymError
from ..registry import register
from . import vocab
from .base import Generated
from .common import DATETIME_PATTERN, MONTH_ABBR, make_schema, p, p_count, p_strings, parse_datetime

LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")
MESSAGES: dict[str, dict[str, tuple[str, ...]]] = {
    "api": {
        "DEBUG": ("Cache hit for key product:{id}", "Routing table reloaded ({n} routes)"),
        "INFO": (
            "GET /api/v1/orders/{id} 200 in {ms} ms",
            "POST /api/v1/cart 201 in {ms} ms",
            "GET /api/v1/products?page={n} 200 in {ms} ms",
        ),
        "WARN": ("Slow request GET /api/v1/reports/{id} took {slow} ms", "Client {ip} at {pct}% of its rate limit"),
        "ERROR": (
            "Unhandled exception in GET /api/v1/orders/{id}: KeyError 'customer_id'",
            "Upstream payments returned 502 for POST /api/v1/checkout",
        ),
    },
    "auth": {
        "DEBUG": ("Session {hex} extended by 30 min",),
        "INFO": ("User {user} logged in from {ip}", "Token refreshed for user {user}", "User {user} logged out"),
        "WARN": ("Failed login for user {user} from {ip} (attempt {n})", "Password reset requested for {user}"),
        "ERROR": ("Invalid JWT signature for user {user}", "LDAP connection lost: timed out after 10 s"),
    },
    "payments": {
        "DEBUG": ("Loaded {n} payment methods for customer cus_{hex}",),
        "INFO": ("Charge ch_{hex} succeeded: {amount} USD", "Refund re_{hex} issued: {amount} USD"),
        "WARN": ("Retrying charge ch_{hex} (attempt 2/3)", "Card declined for customer cus_{hex}"),
        "ERROR": (
            "Payment gateway timeout after 30000 ms (charge ch_{hex})",
            "Webhook signature mismatch for event evt_{hex}",
        ),
    },
    "worker": {
        "DEBUG": ("Heartbeat: {n} jobs in queue",),
        "INFO": ("Job {id} send_invoice_emails finished in {ms} ms", "Picked up job {id} generate_report"),
        "WARN": ("Job {id} took {slow} ms (threshold 1000 ms)", "Queue depth {n}0 above soft limit"),
        "ERROR": (
            "Job {id} failed: SMTP connection reset by peer",
            "Job {id} failed after 3 retries: disk quota exceeded",
        ),
    },
    "db": {
        "DEBUG": ("Autovacuum on table orders skipped",),
        "INFO": ("Checkpoint complete: wrote {n}00 buffers", "Connection pool: {n} of 20 in use"),
        "WARN": ("Slow query ({slow} ms): SELECT * FROM orders WHERE customer_id = $1", "Replication lag {n} s"),
        "ERROR": ("could not connect to server: Connection refused", "deadlock detected while updating table invoices"),
    },
}
GENERIC = {
    "DEBUG": ("Config value cache_ttl=300 loaded",),
    "INFO": ("Request handled in {ms} ms", "Health check ok"),
    "WARN": ("Response time {slow} ms above threshold",),
    "ERROR": ("Unhandled exception: ValueError('invalid input')", "Connection to upstream refused"),
}
PATHS: dict[str, tuple[str, ...]] = {
    "web": ("GET /", "GET /pricing", "GET /blog/{slug}", "GET /login"),
    "api": ("GET /api/v1/orders/{id}", "GET /api/v1/products?page={n}", "POST /api/v1/cart"),
    "auth": ("POST /api/v1/auth/login", "POST /api/v1/auth/refresh", "POST /api/v1/auth/logout"),
    "payments": ("POST /api/v1/payments", "GET /api/v1/payments/{id}"),
    "static": ("GET /static/js/app.{hex}.js", "GET /static/css/main.{hex}.css", "GET /favicon.ico"),
}
AGENTS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_3) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3 Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_3 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
    "curl/8.5.0",
    "python-requests/2.31.0",
)
DEFAULT_SERVICES = {"nginx": ["web", "api", "auth", "payments", "static"]}


def _fill(rng: random.Random, template: str) -> str:
    """Replace {user} {ip} {ms} {slow} {hex} {amount} {slug} {n} {pct} {id} with random values."""
    if "{" not in template:
        return template

    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key == "user":
            return f"{rng.choice(vocab.FIRST_NAMES).lower()}.{rng.choice(vocab.LAST_NAMES).lower()}"
        if key == "ip":
            return _ip(rng)
        if key == "ms":
            return str(int(rng.lognormvariate(4, 0.7)) + 2)
        if key == "slow":
            return str(rng.randint(1500, 9000))
        if key == "hex":
            return f"{rng.getrandbits(32):08x}"
        if key == "amount":
            return f"{rng.randint(500, 50000) / 100:.2f}"
        if key == "slug":
            return rng.choice(("pricing-update", "spring-release", "team-offsite", "how-we-ship"))
        if key == "n":
            return str(rng.randint(2, 9))
        if key == "pct":
            return str(rng.randint(50, 95))
        return str(rng.randint(1000, 99999))  # id

    return re.sub(r"{(\w+)}", sub, template)


def _ip(rng: random.Random) -> str:
    return f"{rng.choice(('203.0.113', '198.51.100', '192.0.2'))}.{rng.randint(2, 254)}"


@register("generator", "log_lines")
class LogLines:
    """Log file in one of four formats with INFO/WARN/ERROR (and optional DEBUG) lines.

    Formats: `app` (`2026-03-02 09:00:01.123 INFO  [api] message`), `syslog` (`Mar  2 09:00:01
    host service[pid]: LEVEL message`), `nginx` (combined format + request time in seconds; level
    from status: 5xx ERROR, 4xx WARN, else INFO; service from the path) and `jsonl`.
    data: {entries: [{line, timestamp, level, service, message | nginx fields ...}], summary:
    {total, by_level, by_service, by_status (nginx), error_lines, first_error, last_error, start,
    end}}; timestamps are ISO (YYYY-MM-DDTHH:MM:SS, plus .mmm for app/jsonl).
    """

    name = "log_lines"
    schema = make_schema(
        name,
        __doc__.split("\n")[0],
        {
            "format": p("string", "Log format.", "app", enum=["app", "syslog", "nginx", "jsonl"]),
            "lines": p_count("Number of log lines.", 60, minimum=1, maximum=100_000),
            "start": p(
                "string",
                "Timestamp of the first line (YYYY-MM-DDTHH:MM:SS).",
                "2026-03-02T09:00:00",
                pattern=DATETIME_PATTERN,
            ),
            "interval_seconds": p("number", "Mean gap between lines.", 5, exclusiveMinimum=0, maximum=86400),
            "services": p_strings(
                "Services (null: api auth payments worker db; nginx: web api auth payments static).", None, minItems=1
            ),
            "errors": p_count("Number of ERROR lines (nginx: 5xx responses).", 3),
            "error_services": p_strings("Services the errors come from (null: any service).", None, minItems=1),
            "warnings": p(["integer", "null"], "Number of WARN lines (nginx: 4xx); null: about 10%.", None, minimum=0),
            "debug": p("boolean", "Mix in DEBUG lines (not for nginx).", False),
            "burst": p(
                "boolean",
                "Put the errors in one burst of consecutive lines a few ms apart, all "
                "from one service (drawn from error_services).",
                False,
            ),
            "host": p("string", "Host name (syslog, jsonl).", "web-01", pattern="^[A-Za-z0-9.-]+$"),
        },
    )

    @staticmethod
    def generate(rng: random.Random, params: dict) -> Generated:
        fmt, n = params["format"], int(params["lines"])
        services = list(params["services"] or DEFAULT_SERVICES.get(fmt, list(MESSAGES)))
        err_services = list(params["error_services"] or services)
        n_err = int(params["errors"])
        n_warn = int(params["warnings"]) if params["warnings"] is not None else n // 10
        if n_err + n_warn > n:
            raise ClawgymError("log_lines: errors + warnings exceed lines")
        if params["burst"] and n_err:  # one incident: consecutive lines from one service
            err_services = [rng.choice(err_services)]
            first = rng.randrange(n - n_err + 1)
            err_idx = set(range(first, first + n_err))
        else:
            err_idx = set(rng.sample(range(n), n_err))
        warn_idx = set(rng.sample([i for i in range(n) if i not in err_idx], n_warn))
        t = parse_datetime(params["start"], "start")
        precise = fmt in ("app", "jsonl")
        pids = {s: rng.randint(800, 32000) for s in sorted(set(services) | set(err_services))}
        entries, lines = [], []
        mean_ms = float(params["interval_seconds"]) * 1000
        for i in range(n):
            if i:
                gap = (
                    rng.randint(40, 900)
                    if params["burst"] and i in err_idx and i - 1 in err_idx
                    else int(rng.expovariate(1 / mean_ms))
                )
                t += timedelta(milliseconds=gap if precise else round(gap / 1000) * 1000)
            if i in err_idx:
                level, service = "ERROR", rng.choice(err_services)
            else:
                level = (
                    "WARN"
                    if i in warn_idx
                    else ("DEBUG" if params["debug"] and fmt != "nginx" and rng.random() < 0.15 else "INFO")
                )
                service = rng.choice(services)
            stamp = t.isoformat(timespec="milliseconds" if precise else "seconds")
            entry: dict[str, Any] = {"line": i + 1, "timestamp": stamp, "level": level, "service": service}
            if fmt == "nginx":
                lines.append(_nginx(rng, t, level, service, entry))
            else:
                msg = _fill(rng, rng.choice(MESSAGES.get(service, GENERIC)[level]))
                entry["message"] = msg
                if fmt == "app":
                    lines.append(f"{stamp.replace('T', ' ')} {level:<5} [{service}] {msg}")
                elif fmt == "syslog":
                    entry.update(host=params["host"], pid=pids[service])
                    lines.append(
                        f"{MONTH_ABBR[t.month - 1]} {t.day:2d} {stamp[11:19]} {params['host']} "
                        f"{service}[{pids[service]}]: {level} {msg}"
                    )
                else:
                    entry.update(host=params["host"], request_id=f"req-{rng.getrandbits(48):012x}")
                    lines.append(json.dumps({k: v for k, v in entry.items() if k != "line"}, sort_keys=True))
            entries.append(entry)
        return Generated(
            content=("\n".join(lines) + "\n").encode(),
            data={"entries": entries, "summary": _summary(entries, fmt, services + err_services)},
        )


def _nginx(rng: random.Random, t: datetime, level: str, service: str, entry: dict) -> str:
    method_path = _fill(rng, rng.choice(PATHS.get(service, (f"GET /{service}/{{id}}", f"POST /{service}"))))
    method, path = method_path.split(" ", 1)
    if level == "ERROR":
        status, ms = rng.choice((500, 502, 503, 504)), rng.randint(800, 30000)
    elif level == "WARN":
        status, ms = rng.choice((404, 404, 401, 403, 429)), rng.randint(1, 60)
        if status == 404 and rng.random() < 0.5:
            method, path = "GET", rng.choice(("/wp-login.php", "/.env", "/old-page", "/api/v0/users"))
    else:
        status = 201 if method == "POST" else (304 if service == "static" and rng.random() < 0.4 else 200)
        ms = int(rng.lognormvariate(3.5, 0.8)) + 1
    size = 0 if status == 304 else rng.randint(150, 600) if status >= 400 else rng.randint(400, 48000)
    agent, ip = rng.choice(AGENTS), _ip(rng)
    referer = "-" if rng.random() < 0.6 else "https://www.example.com/"
    entry.update(
        ip=ip, method=method, path=path, status=status, bytes=size, referer=referer, user_agent=agent, latency_ms=ms
    )
    stamp = f"{t.day:02d}/{MONTH_ABBR[t.month - 1]}/{t.year}:{t.hour:02d}:{t.minute:02d}:{t.second:02d} +0000"
    return (
        f'{ip} - - [{stamp}] "{method} {path} HTTP/1.1" {status} {size} "{referer}" "{agent}" '
        f"{ms // 1000}.{ms % 1000:03d}"
    )


def _summary(entries: list[dict], fmt: str, service_names: list[str]) -> dict:
    """Counts per level (all four, zeros included), per service (all configured) and per status."""
    levels = Counter(e["level"] for e in entries)
    services = Counter({s: 0 for s in service_names})
    services.update(e["service"] for e in entries)
    errors = [e for e in entries if e["level"] == "ERROR"]
    out: dict[str, Any] = {
        "total": len(entries),
        "by_level": {k: levels[k] for k in LEVELS},
        "by_service": {k: services[k] for k in sorted(services)},
        "error_lines": [e["line"] for e in errors],
        "first_error": errors[0]["timestamp"] if errors else None,
        "last_error": errors[-1]["timestamp"] if errors else None,
        "start": entries[0]["timestamp"],
        "end": entries[-1]["timestamp"],
    }
    if fmt == "nginx":
        out["by_status"] = {str(k): v for k, v in sorted(Counter(e["status"] for e in entries).items())}
    return out
