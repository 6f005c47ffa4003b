"""Runs inside a grading sandbox (standard library only): call a PinchBench grader the way PinchBench's runner does.

`python3 pinchbench_driver.py GRADER TRANSCRIPT WORKSPACE CLOCK`, started by the grader launcher
(grader_launch.py) as `__main__`. It freezes the clock at CLOCK (ISO 8601; it then runs forward
in real time), so `datetime.now()`, `date.today()` and `time.time()` inside the grader give the
trial's clock, the time the agent was told; reads the transcript JSONL into a list (a line that
fails to parse becomes `{"raw", "parse_error"}`); executes the grader's source and calls
`grade(transcript, WORKSPACE)`.

It writes one JSON line on the stdout it was started with: `{"scores": {name: float},
"dropped": [names of non-numeric values]}`, or `{"error": "..."}` when the grader raised or
returned something other than a dict. Whatever the grader (or a program it starts) prints goes
to stderr, so nothing it prints can pass for the result.
"""

import datetime as _dt
import json
import numbers
import os
import sys
import time as _time
import traceback


def freeze_clock(iso: str) -> None:
    """Make `datetime`, `date` and `time` read CLOCK (plus the real time elapsed since this call)."""
    text = iso.strip()
    start = _dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    if start.tzinfo is None:
        start = start.replace(tzinfo=_dt.timezone.utc)
    base, mono, began = start.timestamp(), _time.monotonic, _time.monotonic()
    real_datetime, real_date = _dt.datetime, _dt.date
    real_localtime, real_gmtime, real_ctime = _time.localtime, _time.gmtime, _time.ctime
    real_strftime, real_asctime = _time.strftime, _time.asctime

    def now_ts() -> float:
        return base + (mono() - began)

    class _DateMeta(type):
        def __instancecheck__(cls, obj):
            return isinstance(obj, real_date)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, real_date)

    class _DateTimeMeta(type):
        def __instancecheck__(cls, obj):
            return isinstance(obj, real_datetime)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, real_datetime)

    class date(real_date, metaclass=_DateMeta):
        @classmethod
        def today(cls):
            t = real_datetime.fromtimestamp(now_ts())
            return real_date(t.year, t.month, t.day)

    class datetime(real_datetime, metaclass=_DateTimeMeta):
        @classmethod
        def now(cls, tz=None):
            return real_datetime.fromtimestamp(now_ts(), tz)

        @classmethod
        def today(cls):
            return real_datetime.fromtimestamp(now_ts())

        @classmethod
        def utcnow(cls):
            return real_datetime.fromtimestamp(now_ts(), _dt.timezone.utc).replace(tzinfo=None)

    date.__module__ = datetime.__module__ = "datetime"
    _dt.date, _dt.datetime = date, datetime
    _time.time = now_ts
    _time.time_ns = lambda: int(now_ts() * 1_000_000_000)
    _time.localtime = lambda secs=None: real_localtime(now_ts() if secs is None else secs)
    _time.gmtime = lambda secs=None: real_gmtime(now_ts() if secs is None else secs)
    _time.ctime = lambda secs=None: real_ctime(now_ts() if secs is None else secs)
    _time.asctime = lambda t=None: real_asctime(real_localtime(now_ts()) if t is None else t)
    _time.strftime = lambda fmt, t=None: real_strftime(fmt, real_localtime(now_ts()) if t is None else t)


def read_transcript(path: str) -> list:
    """The transcript's lines, parsed as PinchBench's runner parses them."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                out.append({"raw": line, "parse_error": str(e)})
    return out


def summarize(scores) -> dict:
    """The numeric values of what grade() returned (booleans count as 1 and 0), in its order."""
    if not isinstance(scores, dict):
        return {"error": f"grade() returned {type(scores).__name__}, expected a dict of criterion -> score"}
    values, dropped = {}, []
    for key, value in scores.items():
        if isinstance(value, numbers.Real):
            values[str(key)] = float(value)
        else:
            dropped.append(str(key))
    return {"scores": values, "dropped": dropped}


def main() -> None:
    grader, transcript_path, workspace, clock = sys.argv[1:5]
    result_fd = os.dup(1)  # not inherited by anything the grader starts
    sys.stdout.flush()
    os.dup2(2, 1)
    freeze_clock(clock)
    transcript = read_transcript(transcript_path)
    try:
        with open(grader, encoding="utf-8") as fh:
            source = fh.read()
        namespace = {"__name__": "pinchbench_grader", "__file__": grader, "__builtins__": __builtins__}
        exec(compile(source, grader, "exec"), namespace)
        grade = namespace.get("grade")
        if not callable(grade):
            result = {"error": "the Automated Checks block defines no grade(transcript, workspace_path) function"}
        else:
            result = summarize(grade(transcript, workspace))
    except BaseException as e:  # noqa: BLE001 - the runner scores any exception 0
        result = {"error": f"{type(e).__name__}: {e}"[:1000], "traceback": traceback.format_exc()[-4000:]}
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    os.write(result_fd, (json.dumps(result) + "\n").encode("utf-8"))


if __name__ == "__main__":
    main()
