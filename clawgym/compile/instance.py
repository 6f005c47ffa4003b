"""Compile one instance of a task spec for a seed: sample its params, render its templates, build
its files (workspace, generated data, bootstrap and memory files, skills), solution and checks.

Pure: reads spec files and the library, never touches a sandbox or a model.
"""

from __future__ import annotations

import hashlib
import random
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2

from .. import registry
from ..errors import ClawgymError, Problem, SpecError
from ..spec.library import FileTree, read_tree
from ..spec.load import Document
from ..spec.params import sample_params
from ..spec.names import uses_any
from ..spec.render import RenderError, is_template, problem, render_text, render_value
from ..spec.validate import plugin_schema, raw_schema, rendered_value_problems, resolve
from ..spec.task import Task
from .task_spec import TaskSpec

BOOTSTRAP_FILES = ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "HEARTBEAT.md")
PERSONA_DEFAULTS = {
    "pronouns": None,
    "organization": None,
    "location": None,
    "timezone": "UTC",
    "email": None,
    "tone": None,
    "bio": None,
    "habits": [],
    "preferences": [],
    "facts": {},
    "contacts": [],
}
STEP_KINDS = ("exec", "python", "script", "write", "message", "cron")
DEFAULT_LIMITS = {
    "turns": 30,
    "seconds": 600,
    "memory_mb": 2048,
    "pids": 256,
    "output_bytes": 1_000_000,
    "verify_seconds": 300,
}


@lru_cache(maxsize=None)
def _default_template(name: str) -> str:
    from importlib import resources

    return resources.files("clawgym.templates").joinpath(name).read_text(encoding="utf-8")


def _tree_hash(path: Path) -> str:
    """sha256 of a file, or of a folder's files (names and contents, in name order)."""
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    digest = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(f.relative_to(path).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()


class InstanceCompiler:
    """Holds the render context and the problems found while compiling one instance."""

    def __init__(self, spec: TaskSpec, seed: int, skip: set | None = None):
        self.spec, self.doc, self.seed = spec, spec.doc, seed
        self.skip = skip or set()  # parts already reported broken (see problems_beyond)
        self.problems: list[Problem] = []
        self.failed: dict[str, Problem | None] = {}  # names whose value could not be computed -> the cause
        self.skipped: dict[int, int] = {}  # id of a cause -> how many later fields that use it were skipped
        self.files: dict[str, bytes] = {}
        self.executables: set[str] = set()
        self.own_files: set[str] = set()  # written by the task's own `files` entries
        self.extra: dict[str, str] = {}

    def rng(self, purpose: str) -> random.Random:
        return random.Random(f"{self.spec.name}:{self.seed}:{purpose}")

    def run(self) -> Task:
        data, lib, doc = self.spec.data, self.spec.library, self.doc
        params = sample_params(data.get("params") or {}, self.rng("params"))
        personas = data["persona"] if isinstance(data["persona"], list) else [data["persona"]]
        persona_name = personas[self.rng("persona").randrange(len(personas))]
        persona = {**PERSONA_DEFAULTS, **lib.persona(persona_name, doc.where(("persona",)))}
        persona.setdefault("first_name", persona["full_name"].split()[0])
        skills = [lib.skill(s, doc.where(("skills", i))) for i, s in enumerate(data.get("skills", []))]
        ws = lib.workspace(data["workspace"], doc.where(("workspace",)))
        self.ctx: dict[str, Any] = {
            "params": params,
            "persona": persona,
            "data": {},
            "vars": {},
            "task": {"name": self.spec.name, "seed": self.seed, "category": data.get("category", "")},
            "skills": [s.spec["name"] for s in skills],
        }
        file_schema = raw_schema("common")["$defs"]["file_entry"]
        entries = [(ws.doc, ("files", i), e, ws.folder) for i, e in enumerate(ws.doc.data.get("files", []))]
        entries += [(doc, ("files", i), e, doc.folder) for i, e in enumerate(data.get("files", []))]
        self._add_tree(ws.static, "")
        for edoc, key, entry, base in entries:
            if "generate" in entry:
                self._generated_file(edoc, key, entry, file_schema, base)
        for name, template in (data.get("vars") or {}).items():
            before = len(self.problems)
            if ("vars", name) in self.skip:
                self.fail(f"vars.{name}", None)
                continue
            value = self.render({"x-template": "value"}, template, ("vars", name))
            if len(self.problems) > before or self.uses_failed(template):
                self.fail(
                    f"vars.{name}",
                    self.problems[before] if len(self.problems) > before else self.failed[self.uses_failed(template)],
                )
            else:
                self.ctx["vars"][name] = value
        for edoc, key, entry, base in entries:
            if "generate" not in entry and not (edoc is doc and key in self.skip):
                self._plain_file(edoc, key, self.render(file_schema, entry, key, edoc), base)
        self._bootstrap(ws.doc)
        self._memory()
        for skill in skills:
            self._add_tree(skill.tree, f"skills/{skill.spec['name']}")
        schema = raw_schema("task")["properties"]
        instruction = self.render(schema["instruction"], data["instruction"], ("instruction",))
        followups = self.render(schema["followups"], data.get("followups", []), ("followups",))
        solution = [
            self._solution_step(schema["solution"]["items"], step, i)
            for i, step in enumerate(data.get("solution") or [])
            if ("solution", i) not in self.skip
        ]
        checks = [
            self._check(schema["checks"]["items"], check, i)
            for i, check in enumerate(data["checks"])
            if ("checks", i) not in self.skip
        ]
        rubric = self.render(schema["rubric"], data.get("rubric", []), ("rubric",))
        tools = self.render(schema["tools"], data.get("tools", {}), ("tools",))
        clock = self.render(schema["clock"], data.get("clock", schema["clock"]["default"]), ("clock",))
        if self.problems:
            raise SpecError(self._with_skipped(self.problems))
        return Task(
            name=self.spec.name,
            category=data.get("category", ""),
            seed=self.seed,
            params=params,
            persona=persona_name,
            skills=tuple(self.ctx["skills"]),
            workspace=data["workspace"],
            instruction=instruction,
            files=self.files,
            executables=frozenset(self.executables),
            solution=tuple(solution),
            checks=tuple(checks),
            rubric=tuple(rubric),
            rubric_weight=float(data.get("rubric_weight", 0.3)),
            limits={**DEFAULT_LIMITS, **(data.get("limits") or {})},
            network=bool(data.get("network", False)),
            mount=data.get("mount", "/root/.openclaw/workspace"),
            tools=tools,
            clock=clock,
            title=data.get("title", ""),
            subcategory=data.get("subcategory", ""),
            difficulty=data.get("difficulty", ""),
            spec_file=doc.file,
            task_dir=str(doc.folder),
            extra_hashed=self.extra,
            solution_lines=tuple(doc.line(("solution", i)) for i in range(len(solution))),
            followups=tuple(
                {"message": f["message"], "new_session": bool(f.get("new_session", False))} for f in followups or []
            ),
        )

    # -- names that failed -----------------------------------------------------------------
    def fail(self, name: str, cause: Problem | None) -> None:
        """`name` (`vars.x`, `data.y`) has no value: later templates that use it are skipped, not
        reported again (`cause` is the problem reported for it, None when reported elsewhere)."""
        self.failed[name] = cause
        head, _, leaf = name.partition(".")
        self.ctx[head][leaf] = jinja2.StrictUndefined(name=leaf)

    def uses_failed(self, value: Any) -> str | None:
        """The first failed name a template (or a structure of templates) uses, or None."""
        if not self.failed:
            return None
        for name in self.failed:
            if uses_any(value, {name}):
                return name
        return None

    def _with_skipped(self, problems: list[Problem]) -> list[Problem]:
        """Each cause says how many later fields that use its name were left unchecked."""
        for p in problems:
            count = self.skipped.get(id(p), 0)
            if count:
                note = f"{count} later field{'s' if count > 1 else ''} that use{'' if count > 1 else 's'} it will be checked once it is fixed"
                p.hint = (f"{p.hint} {note}" if p.hint.endswith("?") else f"{p.hint}; {note}") if p.hint else note
        return problems

    # -- rendering -------------------------------------------------------------------------
    def render(self, schema: dict, value: Any, path: tuple, doc: Document | None = None) -> Any:
        """Render every template field of `value` that `schema` marks, recording problems."""
        doc = doc or self.doc
        schema = resolve(schema)
        if "x-plugin" in schema and isinstance(value, dict) and isinstance(value.get("type"), str):
            schema = plugin_schema(schema["x-plugin"], value["type"])
        mode = schema.get("x-template")
        if mode and is_template(value) and self.failed:
            used = self.uses_failed(value)
            if used:  # follows from a problem already reported: skipped, counted on the cause
                cause = self.failed[used]
                if cause is not None:
                    self.skipped[id(cause)] = self.skipped.get(id(cause), 0) + 1
                return value
        if mode and is_template(value):
            try:
                out = render_text(value, self.ctx) if mode == "text" else render_value(value, self.ctx)
            except RenderError as exc:
                self.problems.append(problem(exc, doc.where(path)))
                return value
            self.problems += [
                Problem(f"after rendering: {p.what}", file=p.file, line=p.line, key=p.key, hint=p.hint)
                for p in rendered_value_problems(schema, out, doc, path)
            ]
            return out
        inherited = {"x-template": mode} if mode else {}  # a templated mapping or list: its strings too
        if isinstance(value, dict):
            props, extra = schema.get("properties", {}), schema.get("additionalProperties")
            return {
                k: self.render(
                    props.get(k) or (extra if isinstance(extra, dict) and extra else inherited), v, path + (k,), doc
                )
                for k, v in value.items()
            }
        if isinstance(value, list):
            items = schema.get("items") if isinstance(schema.get("items"), dict) and schema["items"] else inherited
            return [self.render(items, v, path + (i,), doc) for i, v in enumerate(value)]
        return value

    # -- files -----------------------------------------------------------------------------
    def _safe_path(self, rel: Any, doc: Document, key: tuple) -> str | None:
        p = PurePosixPath(str(rel))
        if not str(rel).strip() or p.is_absolute() or ".." in p.parts:
            self.problems.append(
                Problem(
                    f"path {rel!r} must be relative to the workspace and stay inside it",
                    **doc.where(key),
                    hint="write it like 'input/data.csv'",
                )
            )
            return None
        return p.as_posix().rstrip("/") if str(rel) not in (".", "./") else ""

    def _generated_file(self, doc: Document, key: tuple, declared: dict, schema: dict, base: Path) -> None:
        from ..generators import run_generator

        stem = str(declared.get("path", "")).rsplit("/", 1)[-1].rsplit(".", 1)[0]
        data_name = str(declared.get("name") or stem.replace("-", "_").replace(".", "_"))
        if doc is self.doc and key in self.skip:
            self.fail(f"data.{data_name}", None)
            return
        before = len(self.problems)
        entry = self.render(schema, declared, key, doc)
        rel = self._safe_path(entry["path"], doc, key + ("path",))
        gen = dict(entry["generate"])
        if rel is None or len(self.problems) > before or self.uses_failed(declared):
            self.fail(
                f"data.{data_name}",
                self.problems[before]
                if len(self.problems) > before
                else self.failed[self.uses_failed(declared) or ""]
                if self.uses_failed(declared)
                else None,
            )
            return
        gen_type = gen.pop("type")
        try:
            out = run_generator(gen_type, gen, f"{self.spec.name}:{self.seed}:{rel}")
        except Exception as exc:  # noqa: BLE001 - a generator failing on these params is a spec problem
            self.problems.append(Problem(f"generator {gen_type!r} failed: {exc}", **doc.where(key + ("generate",))))
            self.fail(f"data.{data_name}", self.problems[-1])
            return
        if out.files is not None:
            for sub, content in out.files.items():
                self.files[f"{rel}/{sub}" if rel else sub] = content
        else:
            self.files[rel] = out.content or b""
        name = entry.get("name") or PurePosixPath(rel).stem.replace("-", "_").replace(".", "_")
        if name in self.ctx["data"]:
            self.problems.append(
                Problem(
                    f"two generated files expose data as {name!r}",
                    **doc.where(key),
                    hint="give one of them a distinct 'name:'",
                )
            )
        self.ctx["data"][name] = out.data

    def _plain_file(self, doc: Document, key: tuple, entry: dict, base: Path) -> None:
        given = [k for k in ("content", "template", "source") if k in entry]
        if len(given) != 1:
            self.problems.append(
                Problem(
                    f"give exactly one of content, template, source, generate (found {', '.join(given) or 'none'})",
                    **doc.where(key),
                )
            )
            return
        rel = self._safe_path(entry["path"], doc, key + ("path",))
        if rel is None:
            return
        if "source" in entry:
            src = (base / entry["source"]).resolve()
            if src.is_dir():
                tree = read_tree(src)
                self._add_tree(tree, rel)
                if doc is self.doc:
                    self.own_files.update(f"{rel}/{sub}" if rel else sub for sub in tree.files)
                return
            if not src.is_file():
                self.problems.append(
                    Problem(
                        f"source file {entry['source']!r} not found next to {doc.file}",
                        **doc.where(key + ("source",)),
                        hint="paths are relative to the spec file",
                    )
                )
                return
            self.files[rel] = src.read_bytes()
        else:
            self.files[rel] = str(entry.get("content", entry.get("template"))).encode("utf-8")
        if entry.get("executable"):
            self.executables.add(rel)
        if doc is self.doc:
            self.own_files.add(rel)

    def _add_tree(self, tree: FileTree, prefix: str) -> None:
        for sub, content in tree.files.items():
            path = f"{prefix}/{sub}" if prefix else sub
            self.files[path] = content
            if sub in tree.executables:
                self.executables.add(path)

    def _bootstrap(self, ws_doc: Document) -> None:
        overrides = {**(ws_doc.data.get("bootstrap") or {})}
        task_over = self.spec.data.get("bootstrap") or {}
        for name in (*BOOTSTRAP_FILES, "BOOTSTRAP.md"):
            if name in self.own_files:  # the task ships its own (an imported workspace)
                continue
            if name in task_over:
                source, doc, key = task_over[name], self.doc, ("bootstrap", name)
            elif name in overrides:
                source, doc, key = overrides[name], ws_doc, ("bootstrap", name)
            elif name in BOOTSTRAP_FILES:
                source, doc, key = _default_template(name), self.doc, ("bootstrap",)
            else:
                continue
            self.files[name] = str(self.render({"x-template": "text"}, source, key, doc)).encode()
        if "USER.md" not in self.own_files:
            self.files["USER.md"] = self.render(
                {"x-template": "text"}, _default_template("USER.md"), ("persona",)
            ).encode()

    def _memory(self) -> None:
        memory = self.spec.data.get("memory") or {}
        schema = raw_schema("task")["properties"]["memory"]
        rendered = self.render(schema, memory, ("memory",))
        if "long_term" in rendered:
            self.files["MEMORY.md"] = rendered["long_term"].encode()
        for day, text in (rendered.get("daily") or {}).items():
            self.files[f"memory/{day}.md"] = text.encode()

    # -- solution and checks ---------------------------------------------------------------
    def _solution_step(self, schema: dict, step: dict, i: int) -> dict:
        key = ("solution", i)
        kinds = [k for k in STEP_KINDS if k in step]
        if len(kinds) != 1:
            self.problems.append(
                Problem(
                    f"a solution step needs exactly one of {', '.join(STEP_KINDS)} "
                    f"(found {', '.join(kinds) or 'none'})",
                    **self.doc.where(key),
                )
            )
            return step
        out = self.render(schema, step, key)
        if "script" in out:
            src = self.doc.folder / out["script"]
            if not src.is_file():
                self.problems.append(
                    Problem(f"script {out['script']!r} not found next to the spec", **self.doc.where(key + ("script",)))
                )
                return out
            out["source"] = src.read_text(encoding="utf-8")
            out["interpreter"] = "python3" if src.suffix == ".py" else "bash"
        if "write" in out:
            self._safe_path(out["write"]["path"], self.doc, key + ("write", "path"))
        return out

    def _check(self, schema: dict, check: dict, i: int) -> dict:
        key = ("checks", i)  # the declared check was validated when the spec was loaded
        out = self.render(schema, check, key)  # rendered fields are checked against their schema
        script = out.get("script")
        if isinstance(script, str) and not (self.doc.folder / script).is_file():
            self.problems.append(
                Problem(
                    f"grading script {script!r} not found next to the spec",
                    **self.doc.where(key + ("script",)),
                    hint="paths are relative to the spec file",
                )
            )
            return out
        try:
            graded_with = registry.get("check", str(out.get("type"))).graded_with(out)
        except (ClawgymError, AttributeError):
            graded_with = []
        for rel in graded_with:
            self.extra[f"checks[{i}]:{rel}"] = _tree_hash(self.doc.folder / rel)
        return out
