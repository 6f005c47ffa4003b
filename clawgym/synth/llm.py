"""The LLM route: a policy writes a task spec for a persona and scenario; a spec that is invalid or
states its own answers goes back to the model with the validator's messages for a bounded number
of repair rounds; accepted specs pass the same filters and dedup as the embedded routes.

A model that fails (endpoint down, no YAML in its answer) ends in a rejection with a reason, never
an exception; a prompt template that cannot be read or rendered is a user error (ClawgymError).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Iterator

import jinja2

from .. import registry
from ..compile.compiler import compile_task, load_task_spec
from ..errors import ClawgymError, Problem, SpecError
from ..spec.library import Library, find_root, library_for
from ..spec.load import Document, load_text
from ..spec.validate import plugin_schema
from ..spec.task import Task, thaw
from .dedup import DedupSettings
from ..spec.write import dump_spec
from .filters import FilterSettings
from .make import Made, finish, task_meta
from .sample import Candidate

PROMPTS = Path(__file__).parent / "prompts"
_FENCE = re.compile(r"^([ \t]*)```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:^\1```[ \t]*$|\Z)", re.S | re.M)
_BARE = re.compile(r"^(?:#.*\n)*(?:apiVersion|kind)[ \t]*:", re.M)
_COMMON_CHECK_KEYS = ("type", "name", "weight", "gate", "description")
ANSWER_KEYS = ("expected", "fields", "contains", "output_contains")  # where checks hold expected values
DEFAULT_MAX_TOKENS = 4096  # a whole spec with its input files; the policy config's max_tokens wins


@dataclass(frozen=True)
class LlmRequest:
    """What to ask for: the task's name, who asks, the scenario (from the taxonomy), the skills
    (primary first, then supporting ones), the workspace template, and the sampling seed."""

    name: str
    persona: str
    category: str
    subcategory: str
    scenario: str
    intents: tuple[str, ...]
    skills: tuple[str, ...]
    workspace: str
    seed: int = 0

    @property
    def family(self) -> str:
        return f"llm-{self.category}-{re.sub(r'[^a-z0-9]+', '-', self.subcategory.lower()).strip('-')}"


@dataclass
class LlmDraft:
    """One request's outcome: the final YAML, or why there is none, and how it was obtained."""

    text: str | None = None
    error: str | None = None
    rounds: int = 0  # repair rounds used
    prompt_sha256: str = ""  # of the rendered first prompt
    model: dict[str, Any] = field(default_factory=dict)
    conversation: list[dict[str, Any]] = field(default_factory=list)
    spec: dict | None = None  # the final spec's data
    task: Task | None = field(default=None, repr=False)
    review: dict[str, Any] | None = None


def extract_yaml(answer: str) -> str | None:
    """The spec in a model's answer: a fenced block (```yaml first), else bare YAML from `apiVersion:`."""
    text = re.sub(r"<think>.*?</think>", "", answer or "", flags=re.S)
    blocks = [(lang.lower(), body) for _, lang, body in _FENCE.findall(text)]
    specs = [b for _, b in blocks if "kind:" in b or "apiVersion:" in b]
    tagged = [b for lang, b in blocks if lang in ("yaml", "yml")]
    for body in [b for b in tagged if b in specs] + specs + tagged:
        return body.rstrip() + "\n"
    m = _BARE.search(text)
    return text[m.start() :].rstrip() + "\n" if m else None


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, (dict, list, tuple)):
        for v in value.values() if isinstance(value, dict) else value:
            yield from _leaves(v)
    else:
        yield value


def _forms(value: Any, key: str) -> list[str]:
    """How an expected value may be written, if it is specific enough to be an answer."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        try:
            if len(Decimal(repr(value)).normalize().as_tuple().digits) < 3:
                return []
        except InvalidOperation:
            return []
        whole = isinstance(value, int) or value.is_integer()
        forms = {repr(value), *([f"{int(value)}", f"{int(value):,}"] if whole else [f"{value:.2f}"])}
        return sorted(forms)
    text = str(value).strip()
    if len(text) < 4 or (key in ("contains", "output_contains") and not re.search(r"\d", text)):
        return []  # a plain phrase the output must contain describes its format, not an answer
    return [text]


def _occurs(form: str, text: str) -> bool:
    return re.search(r"(?<![\w.])" + re.escape(form) + r"(?![\w]|\.\d)", text) is not None


def leaked_answers(task: Task) -> list[tuple[int, str]]:
    """(check index, text) for each expected value that the instruction states and no input file holds.

    Expected values are the leaves of the checks' `expected` and `fields` (and, when they hold a digit,
    `contains` strings): numbers with at least 3 significant digits and strings of at least 4 characters.
    A string the instruction puts in quotes or backticks is a label it defines, not a leak.
    """
    inputs = "\n".join(b.decode("utf-8", "replace") for b in task.files.values())
    found: list[tuple[int, str]] = []
    for i, check in enumerate(thaw(task.checks)):
        for key in ANSWER_KEYS:
            for value in _leaves(check.get(key)):
                forms = _forms(value, key)
                said = [f for f in forms if _occurs(f, task.instruction)]
                if not said or any(_occurs(f, inputs) for f in forms) or (i, said[0]) in found:
                    continue
                if isinstance(value, str) and any(
                    q + forms[0] + e in task.instruction for q, e in ('""', "``", "''", "“”")
                ):
                    continue
                found.append((i, said[0]))
    return found


def check_catalogue() -> list[dict[str, str]]:
    """Every built-in check but `python` (it needs a script file): a one-line summary and its fields."""
    out = []
    for name in registry.names("check"):
        if name != "python":
            schema = plugin_schema("check", name)
            fields = [
                k + ("*" if k in schema.get("required", []) else "")
                for k in schema["properties"]
                if k not in _COMMON_CHECK_KEYS
            ]
            doc = (registry.get("check", name).__doc__ or "").strip().split("\n\n")[0]
            out.append({"type": name, "summary": " ".join(doc.split()), "fields": ", ".join(fields)})
    return out


class LlmWriter:
    """Asks a policy for task specs, validates and repairs them, and reviews them when asked to."""

    def __init__(
        self,
        policy_config: dict[str, Any],
        *,
        library_root: Path,
        prompt: Path | None = None,
        repair_prompt: Path | None = None,
        repair_rounds: int = 2,
        review: bool = False,
    ):
        self.policy_config = dict(policy_config)
        self.library_root = Path(library_root)
        self.repair_rounds, self.do_review = int(repair_rounds), bool(review)
        self._paths = {
            kind: Path(path or PROMPTS / f"{kind}.md.j2")
            for kind, path in (("task", prompt), ("repair", repair_prompt), ("review", None))
        }
        self._setup()
        _ = self.policy  # built now: an unknown backend is a configuration error

    def _setup(self) -> None:
        env = jinja2.Environment(
            undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True
        )
        self._templates = {kind: self._template(env, path) for kind, path in self._paths.items()}
        self._policy: Any = None

    @classmethod
    def from_spec(cls, llm: dict[str, Any], spec_folder: Path, library_root: Path) -> "LlmWriter":
        """The writer for a Synth spec's `llm` block (template paths are relative to the spec's folder)."""
        return cls(
            llm["policy"],
            library_root=library_root,
            prompt=spec_folder / llm["prompt"] if llm.get("prompt") else None,
            repair_prompt=spec_folder / llm["repair_prompt"] if llm.get("repair_prompt") else None,
            repair_rounds=llm.get("repair_rounds", 2),
            review=llm.get("review", False),
        )

    @staticmethod
    def _template(env: jinja2.Environment, path: Path) -> jinja2.Template:
        try:
            return env.from_string(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ClawgymError(f"cannot read the prompt template: {exc.strerror}", file=str(path)) from None
        except jinja2.TemplateSyntaxError as exc:
            raise ClawgymError(f"prompt template: {exc.message}", file=str(path), line=exc.lineno) from None

    def _render(self, kind: str, **ctx: Any) -> str:
        try:
            return self._templates[kind].render(**ctx)
        except jinja2.TemplateError as exc:
            raise ClawgymError(f"the {kind} prompt template cannot be rendered: {exc}") from None

    @property
    def policy(self) -> Any:
        if self._policy is None:
            from ..policy import make_policy

            self._policy = make_policy(self.policy_config)
        return self._policy

    def __getstate__(self) -> dict[str, Any]:  # a worker process builds its own templates and policy
        return {k: v for k, v in self.__dict__.items() if k not in ("_templates", "_policy")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._setup()

    def describe(self) -> dict[str, Any]:
        """The policy's description, scalars only (no scripted turns, never keys)."""
        return {k: v for k, v in self.policy.describe().items() if isinstance(v, (str, int, float, bool))}

    def prompt(self, request: LlmRequest) -> str:
        """The first prompt for `request`: persona, scenario, skills, workspace, spec format, example."""
        lib = Library(self.library_root)
        persona = {"preferences": [], **lib.persona(request.persona, {})}
        skills = [lib.skill(s, {}).spec for s in request.skills]
        ws = lib.workspace(request.workspace, {})
        files = sorted(set(ws.static.files) | {f["path"] for f in ws.doc.data.get("files", [])})
        workspace = {
            "name": request.workspace,
            "description": " ".join(ws.doc.data.get("description", "").split()),
            "files": files[:40] + (["..."] if len(files) > 40 else []),
        }
        example = (PROMPTS / "example.yaml").read_text(encoding="utf-8").rstrip()
        return self._render(
            "task",
            request=request,
            persona=persona,
            skills=skills,
            workspace=workspace,
            checks=check_catalogue(),
            example=example,
        )

    def _ask(self, messages: list[dict[str, Any]], seed: int) -> str:
        sampling = {
            "max_tokens": self.policy_config.get("max_tokens", DEFAULT_MAX_TOKENS),
            "seed": self.policy_config.get("seed", seed),
        }
        return self.policy.complete(messages, **sampling).message.get("content") or ""

    def write(self, request: LlmRequest, target: Path) -> LlmDraft:
        """Ask for a spec, validate it as the file `target`, and send it back up to `repair_rounds` times."""
        first = self.prompt(request)
        draft = LlmDraft(prompt_sha256=hashlib.sha256(first.encode()).hexdigest())
        messages = [{"role": "user", "content": first}]
        draft.conversation = list(messages)
        for rnd in range(self.repair_rounds + 1):
            draft.rounds = rnd
            try:
                draft.model = draft.model or self.describe()
                answer = self._ask(messages, request.seed)
            except Exception as exc:  # noqa: BLE001 - endpoint down, model missing, out of memory...
                draft.error = f"the model failed{f' in repair round {rnd}' if rnd else ''}: {type(exc).__name__}: {exc}"
                return draft
            draft.conversation.append({"role": "assistant", "content": answer})
            kind, problems = self._validate(answer, request, target, draft)
            if kind is None:
                draft.review = self.review(draft.text or "") if self.do_review else None
                return draft
            what = {
                "no-yaml": "no YAML in the model's answer",
                "leak": "the instruction leaks expected answers",
                "invalid": "the spec is still invalid",
            }[kind]
            detail = "; ".join(problems[:3]) if problems else repr(" ".join(answer.split())[:160])
            draft.error = f"{what} after {rnd} repair round{'' if rnd == 1 else 's'}: {detail}"
            if rnd < self.repair_rounds:
                repair = self._render(
                    "repair", request=request, problems=problems, previous=answer, no_yaml=kind == "no-yaml"
                )
                messages = [messages[0], {"role": "assistant", "content": answer}, {"role": "user", "content": repair}]
                draft.conversation.append({"role": "user", "content": repair})
        return draft

    def _validate(
        self, answer: str, request: LlmRequest, target: Path, draft: LlmDraft
    ) -> tuple[str | None, list[str]]:
        """(None, []) when the answer holds a good spec (then `draft` holds it), else (failure kind, problems)."""
        text = extract_yaml(answer)
        if text is None:
            return "no-yaml", []

        def shown(problems: list[Problem]) -> list[str]:  # the model knows its spec as task.yaml
            return [
                (dataclasses.replace(p, file="task.yaml") if p.file == str(target) else p).format() for p in problems
            ]

        try:
            doc = load_text(text, str(target))
            problems = self._force(doc, request)
            if problems:
                return "invalid", shown(problems)
            leaks = leaked_answers(compile_task(load_task_spec(doc.file, doc), 0))
            if leaks:
                return "leak", shown(
                    [
                        Problem(
                            f"the instruction gives away {value!r}, which checks[{i}] expects and no input file contains",
                            **doc.where(("instruction",)),
                            hint="say how to compute it instead; a fixed label the output must use goes in quotes",
                        )
                        for i, value in leaks
                    ]
                )
            final = dump_spec(
                doc.data,
                f"Synthesized by clawgym synth (llm route), persona {request.persona}, "
                f"seed {request.seed}\n(prompt sha256 {draft.prompt_sha256[:16]}).",
            )
            final_doc = load_text(final, str(target))
            draft.task = compile_task(load_task_spec(final_doc.file, final_doc), 0)
        except SpecError as exc:
            return "invalid", shown(exc.problems)
        draft.text, draft.spec, draft.error = final, final_doc.data, None
        return None, []

    @staticmethod
    def _force(doc: Document, request: LlmRequest) -> list[Problem]:
        """Set the requested name, and the category and persona where the model's differ only trivially
        (spelling, case, a one-item list, the persona's full name); a real difference is a problem."""
        if not isinstance(doc.data, dict):
            return [Problem("the YAML is not a mapping of task spec keys", file=doc.file, line=1)]
        data = doc.data
        data.setdefault("apiVersion", "clawgym/v1")
        data.setdefault("kind", "Task")
        data["name"] = request.name
        data.setdefault("subcategory", request.subcategory)
        try:
            full_name = library_for(find_root(doc.folder)).persona(request.persona, {})["full_name"]
        except SpecError:
            full_name = request.persona
        problems, norm = [], lambda v: re.sub(r"[\s_]+", "-", str(v).strip().lower())  # noqa: E731
        for key, want, aliases in (
            ("category", request.category, {request.category}),
            ("persona", request.persona, {request.persona, norm(full_name)}),
        ):
            got = data.get(key, want)
            got = got[0] if isinstance(got, list) and len(got) == 1 else got
            if isinstance(got, str) and norm(got) in aliases:
                data[key] = want
            else:
                problems.append(
                    Problem(
                        f"{key} must be {want!r} (the task is written for it), not {got!r}",
                        **doc.where((key,)),
                        hint=f"set '{key}: {want}'",
                    )
                )
        if not data.get("solution"):  # optional for imported tasks, never for synthesized ones
            problems.append(
                Problem(
                    "missing required key 'solution'",
                    file=doc.file,
                    line=1,
                    hint="a synthesized task needs the reference solution the filters run",
                )
            )
        return problems

    def review(self, draft_text: str) -> dict[str, Any]:
        """The policy's review {"clear": bool, "leaks_answer": bool, "notes": str}, or {"error": ...}."""
        prompt = self._render("review", spec=draft_text)
        try:
            answer = self._ask([{"role": "user", "content": prompt}], 0)
        except Exception as exc:  # noqa: BLE001
            return {"error": f"the model failed: {type(exc).__name__}: {exc}"}
        decoder = json.JSONDecoder()
        for m in re.finditer(r"\{", answer):
            try:
                data, _ = decoder.raw_decode(answer, m.start())
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict) and all(isinstance(data.get(k), bool) for k in ("clear", "leaks_answer")):
                return {
                    "clear": data["clear"],
                    "leaks_answer": data["leaks_answer"],
                    "notes": str(data.get("notes", "")),
                }
        return {"error": "the review is not JSON with boolean 'clear' and 'leaks_answer'", "answer": answer[:300]}


def make_from_llm(
    request: LlmRequest,
    writer: LlmWriter,
    out: Path,
    rel_dir: str,
    settings: FilterSettings,
    dedup: DedupSettings,
    sandbox: dict | None = None,
) -> Made:
    """The LLM route for one request: write (and repair) the spec, then the filters every route passes."""
    c = Candidate("llm", request.family, request.persona, request.seed, request.category, request.subcategory)
    made = Made(c, request.name, f"{rel_dir}/{request.name}.yaml")
    draft = writer.write(request, out / made.path)
    made.meta = {
        "route": "llm",
        "source": {"model": draft.model, "prompt_sha256": draft.prompt_sha256, "repair_rounds": draft.rounds},
    }
    if draft.text is None or draft.spec is None or draft.task is None:
        made.error = draft.error or "the model wrote no task"
        return made
    made.text = draft.text
    made.meta = {**task_meta(draft.task, draft.spec), **made.meta}
    if draft.review is not None:
        made.meta["review"] = draft.review
    return finish(made, draft.spec, None, out, settings, dedup, sandbox)
