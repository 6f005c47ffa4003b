"""An LLM's review of a benchmark instance, recorded beside the human ones.

A model reads what the agent will see (instruction, workspace files) and how it will be graded
(checks, rubric) and answers three questions a reviewer must ask of every instance: is the
instruction ambiguous, does the workspace or the instruction leak the expected answers, and does
any check test something the instruction does not ask for. It is a second pair of eyes, not a
gate: the answer is recorded as given, and an unusable answer (not JSON, wrong shape; small models
often write junk) is recorded with its raw text and the parse error instead of failing the command.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from ..errors import ClawgymError, SpecError
from ..policy.base import Policy, PolicyError
from ..spec.load import Document, load_file, load_text
from ..spec.task import Task, thaw

FORMAT = "clawgym.llm-review/v1"
QUESTIONS = ("ambiguity", "leaked_answers", "unasked_checks")
RECOMMENDATIONS = ("accept", "revise", "reject")
MAX_FILE_CHARS = 2500
MAX_FILES_CHARS = 12000
MAX_RAW_CHARS = 4000

SYSTEM_PROMPT = (
    "You review tasks for a benchmark of AI personal assistants. Each task has an instruction from a user, "
    "a workspace of files the assistant can read and change, and checks that grade the assistant's result "
    "(the assistant never sees the checks). Find problems that make the task unfair or worthless. "
    "Answer with a single JSON object and nothing else."
)

PROMPT_TEMPLATE = """## Instruction given to the assistant
{instruction}

## Workspace files the assistant starts with
{files}

## Checks that grade the result (hidden from the assistant)
{checks}
{rubric}
## Questions
1. ambiguity: could a careful assistant read the instruction in two ways that the checks grade differently?
2. leaked_answers: does the instruction or any workspace file already contain the expected outputs?
3. unasked_checks: does any check require something the instruction does not ask for (a path, format or value)?

## Your answer
Reply with only this JSON object:
{{"ambiguity": {{"problem": false, "notes": "one sentence"}},
 "leaked_answers": {{"problem": false, "notes": "one sentence"}},
 "unasked_checks": {{"problem": false, "notes": "one sentence"}},
 "recommendation": "accept", "summary": "one sentence"}}
recommendation is one of: accept, revise, reject.
"""

_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)\n?```", re.DOTALL | re.IGNORECASE)


def policy_option(text: str) -> dict[str, Any]:
    """A policy config from a command-line option.

    `embedded`, `hf:MODEL` (folder or hub id), `openai:MODEL` (endpoint from $OPENAI_BASE_URL), a
    YAML file holding a policy config (or a run spec, whose `judge:` is used), or an inline YAML
    mapping such as '{type: openai, model: gpt-4o-mini, base_url: http://...}'.
    """
    text = text.strip()
    if text == "embedded":
        return {"type": "hf", "model": "embedded"}
    for prefix in ("hf:", "openai:"):
        if text.startswith(prefix) and len(text) > len(prefix):
            return {"type": prefix[:-1], "model": text[len(prefix) :]}
    if text.startswith("{"):
        doc = load_text(text, "--policy")
    elif Path(text).is_file():
        doc = load_file(text)
    else:
        raise ClawgymError(
            f"--policy {text!r}: not a policy",
            hint="use 'embedded', 'hf:MODEL', 'openai:MODEL', a YAML file or an inline '{type: ..., model: ...}'",
        )
    data = doc.data
    if isinstance(data, dict) and isinstance(data.get("judge"), dict):
        data = data["judge"]
    if not isinstance(data, dict):
        raise ClawgymError("a policy config must be a mapping with a 'type' key", file=doc.file)
    return check_policy(data, doc)


def check_policy(config: dict[str, Any], doc: Document | None = None) -> dict[str, Any]:
    """The policy part of `config` (judge options dropped), validated against the policy's schema."""
    from ..verify.judge import split_judge_config
    from ..spec.validate import validate_plugin

    policy, _ = split_judge_config(config)
    problems = validate_plugin("policy", policy, doc or Document(policy, "--policy"), ())
    if problems:
        raise SpecError(problems)
    return policy


def _file_text(path: str, data: bytes, room: int) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"### {path} (binary, {len(data)} bytes, not shown)"
    if room <= 200:
        return f"### {path} ({len(text)} characters, not shown: prompt budget used up)"
    limit = min(MAX_FILE_CHARS, room)
    shown = text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters cut]"
    return f"### {path}\n```\n{shown}\n```"


def build_messages(task: Task) -> list[dict[str, str]]:
    """The reviewer model's chat messages for one instance."""
    parts, used = [], 0
    for path, data in sorted(task.files.items()):
        part = _file_text(path, data, MAX_FILES_CHARS - used)
        used += len(part)
        parts.append(part)
    checks = yaml.safe_dump(thaw(task.checks), sort_keys=False, allow_unicode=True, width=110)
    rubric = ""
    if task.rubric:
        rubric = (
            "\n## Rubric criteria scored by an LLM judge\n"
            + "\n".join(f"{i}. {c['criterion']}" for i, c in enumerate(task.rubric, 1))
            + "\n"
        )
    prompt = PROMPT_TEMPLATE.format(
        instruction=task.instruction.strip(),
        files="\n".join(parts) or "(none)",
        checks=f"```yaml\n{checks}```",
        rubric=rubric,
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]


def parse_review(text: str | None) -> dict[str, Any]:
    """The review fields from a model's answer; ValueError says what is wrong with it.

    The JSON object may stand alone, sit in one ```json block, or be the first {...} in the text.
    """
    if not text or not text.strip():
        raise ValueError("the answer is empty")
    body = text.strip()
    if not body.startswith("{"):
        fences = _FENCE.findall(body)
        if fences:
            body = fences[0].strip()
        elif "{" in body and "}" in body:
            body = body[body.index("{") : body.rindex("}") + 1]
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    out: dict[str, Any] = {}
    for key in QUESTIONS:
        item = data.get(key)
        if not isinstance(item, dict) or not isinstance(item.get("problem"), bool):
            raise ValueError(f'"{key}" must be an object with a true/false "problem"')
        out[key] = {"problem": item["problem"], "notes": str(item.get("notes", ""))}
    rec = data.get("recommendation")
    if rec not in RECOMMENDATIONS:
        raise ValueError(f'"recommendation" must be one of {", ".join(RECOMMENDATIONS)}, got {rec!r}')
    out["recommendation"] = rec
    out["summary"] = str(data.get("summary", ""))
    return out


def llm_review(task: Task, policy: Policy, *, retries: int = 1, date: str = "") -> dict[str, Any]:
    """Ask `policy` to review `task`; the record for review.yaml (with `parse_error` when unusable).

    A malformed answer is sent back once with the problem (`retries`); a backend failure is a
    ClawgymError (nothing is recorded: the model said nothing).
    """
    messages = build_messages(task)
    raw, problem, attempts = "", "", 0
    review = None
    for attempts in range(1, max(0, retries) + 2):
        try:
            completion = policy.complete(messages, None)
        except PolicyError as e:
            raise ClawgymError(
                f"the reviewing model failed: {e}", hint="check the --policy endpoint or model"
            ) from None
        raw = str((completion.message or {}).get("content") or "")
        try:
            review = parse_review(raw)
            break
        except ValueError as e:
            problem = str(e)
            messages = messages + [
                {"role": "assistant", "content": raw},
                {
                    "role": "user",
                    "content": f"Your answer could not be read: {problem}. Reply again with only the "
                    "JSON object described above.",
                },
            ]
    record: dict[str, Any] = {
        "format": FORMAT,
        "policy": policy.describe(),
        "date": date,
        "hash": task.hash,
        "attempts": attempts,
    }
    if review is not None:
        record["review"] = review
    else:
        record["parse_error"] = problem
    record["raw"] = (
        raw
        if len(raw) <= MAX_RAW_CHARS
        else raw[:MAX_RAW_CHARS] + f"\n[... {len(raw) - MAX_RAW_CHARS} more characters cut]"
    )
    return record


def policy_env_note(config: dict[str, Any]) -> str:
    """A short description of the reviewing policy for the console."""
    where = config.get("base_url") or (os.environ.get("OPENAI_BASE_URL") if config.get("type") == "openai" else None)
    return f"{config.get('type')} {config.get('model', '')}".strip() + (f" at {where}" if where else "")
