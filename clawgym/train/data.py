"""SFT data: where trajectories come from, which are kept, and the tokenised examples built from them.

`load_trajectories` reads run folders (`collect_run`: each trial with its verdict) and trajectory
files or datasets (`read_any`: our JSONL, OpenAI or ShareGPT rows, saved HF datasets). `select`
is rejection sampling: it keeps trajectories with messages whose trial status is allowed and
whose reward reaches the threshold, drops repeated conversations, and caps how many are kept per
task, counting why each dropped one went. `build_examples` turns the kept ones into examples with
exact assistant-only labels (`clawgym.train.render`); `examples_from_sources` does all three for a
Train spec's `data` section.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..errors import ClawgymError
from ..interop.trajectory_formats import read_any
from ..policy.embedded import EMBEDDED_NAME, cache_dir
from ..records.store import collect_run, reward_of, status_of
from ..records.trajectory import Trajectory
from .render import IGNORE, ChatTemplateError, Example, Truncation, has_token_ids, tokenize_example, trajectory_examples

__all__ = [
    "IGNORE",
    "BuildCounts",
    "ChatTemplateError",
    "Example",
    "Selected",
    "SelectionCounts",
    "build_examples",
    "conversation_key",
    "examples_from_sources",
    "load_trajectories",
    "sampled_by",
    "select",
    "task_key",
    "tokenize_example",
    "trajectory_examples",
]


def load_trajectories(sources: Sequence[Path | str]) -> Iterator[Trajectory]:
    """Every trajectory of every source, in order: a results folder (has `trials/`), a trajectory
    file (clawgym, OpenAI or ShareGPT JSONL) or a dataset folder saved with `save_to_disk`."""
    for source in sources:
        path = Path(source)
        if not path.exists():
            raise ClawgymError(f"no such file or folder: {source}", hint="give run folders, JSONL files or datasets")
        if (path / "trials").is_dir():
            yield from collect_run(path)
        else:
            yield from read_any(path)


# ---------------------------------------------------------------------------------------------
# Selection


@dataclass
class SelectionCounts:
    """How many trajectories `select` saw and kept, and why the others were dropped (first reason)."""

    seen: int = 0
    kept: int = 0
    no_messages: int = 0
    status: int = 0  # trial status not among those allowed (or unknown)
    reward: int = 0  # reward below the threshold, or none
    duplicate: int = 0  # the same conversation as one kept before
    over_cap: int = 0  # beyond max_per_task for its task

    def dropped(self) -> dict[str, int]:
        """Non-zero drop reasons."""
        return {k: v for k, v in asdict(self).items() if k not in ("seen", "kept") and v}

    def summary(self) -> str:
        why = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in self.dropped().items())
        return f"kept {self.kept} of {self.seen} trajectories" + (f" (dropped: {why})" if why else "")


class Selected(list):
    """The kept trajectories (a list), with `counts` saying why the others were dropped."""

    def __init__(self, items: Iterable[Trajectory], counts: SelectionCounts):
        super().__init__(items)
        self.counts = counts


def task_key(t: Trajectory) -> str:
    """The task instance a trajectory belongs to: its hash, else its id, else its name."""
    task = t.task or {}
    return str(task.get("hash") or task.get("id") or task.get("name") or "")


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def conversation_key(t: Trajectory) -> str:
    """A digest of what training sees: roles, texts, tool calls (names and parsed arguments) and the
    tools offered. Call ids are left out: they are random per run and no part of what the model learns."""
    messages = []
    for m in t.messages:
        calls = [
            [(c.get("function") or {}).get("name"), _arguments((c.get("function") or {}).get("arguments"))]
            for c in m.get("tool_calls") or []
        ]
        messages.append([m.get("role"), m.get("content"), calls, m.get("name")])
    text = json.dumps([messages, t.tools or []], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def select(
    trajs: Iterable[Trajectory],
    *,
    min_reward: float | None = 1.0,
    statuses: Sequence[str] | None = ("passed",),
    dedupe: bool = True,
    max_per_task: int | None = None,
    seed: int = 0,
) -> Selected:
    """Rejection sampling: keep trajectories with messages, an allowed status (None: any) and a reward
    of at least `min_reward` (None: any, even none); drop repeated conversations (`conversation_key`);
    keep at most `max_per_task` per task (`task_key`), chosen by `seed` whatever the input order.
    Kept trajectories stay in input order."""
    counts = SelectionCounts()
    candidates: list[tuple[Trajectory, str]] = []
    seen_keys: set[str] = set()
    for t in trajs:
        counts.seen += 1
        if not t.messages:
            counts.no_messages += 1
            continue
        if statuses is not None and status_of(t) not in statuses:
            counts.status += 1
            continue
        reward = reward_of(t)
        if min_reward is not None and (reward is None or reward < min_reward):
            counts.reward += 1
            continue
        key = conversation_key(t)
        if dedupe and key in seen_keys:
            counts.duplicate += 1
            continue
        seen_keys.add(key)
        candidates.append((t, key))
    keep = set(range(len(candidates)))
    if max_per_task is not None:
        groups: dict[str, list[int]] = defaultdict(list)
        for i, (t, _) in enumerate(candidates):
            groups[task_key(t)].append(i)
        for task, members in groups.items():
            if len(members) > max_per_task:
                ordered = sorted(members, key=lambda i: candidates[i][1])  # independent of input order
                chosen = set(random.Random(f"{seed}:{task}").sample(ordered, max_per_task))
                keep -= set(members) - chosen
                counts.over_cap += len(members) - max_per_task
    kept = [t for i, (t, _) in enumerate(candidates) if i in keep]
    counts.kept = len(kept)
    return Selected(kept, counts)


# ---------------------------------------------------------------------------------------------
# Examples


@dataclass
class BuildCounts:
    """What `build_examples` made of the selected trajectories."""

    trajectories: int = 0
    examples: int = 0
    from_token_ids: int = 0  # examples built from recorded token ids
    too_long: int = 0  # trajectories with no example left after truncation
    truncated: int = 0  # examples that lost later turns to max_length
    no_assistant: int = 0  # trajectories without an assistant message
    split_boundaries: int = 0  # prompt/turn boundaries tokenised apart (render module docstring)
    trained_tokens: int = 0

    def summary(self) -> str:
        return (
            f"{self.examples} examples from {self.trajectories} trajectories ({self.from_token_ids} from token ids, "
            f"{self.trained_tokens} trained tokens); {self.truncated} truncated, {self.too_long} too long, "
            f"{self.no_assistant} without an assistant turn, {self.split_boundaries} boundaries tokenised apart"
        )


def build_examples(
    trajs: Iterable[Trajectory],
    tokenizer: Any,
    *,
    chat_template: str | None = None,
    max_length: int,
    truncation: Truncation = "turns",
    use_token_ids: bool | Callable[[Trajectory], bool] = True,
) -> tuple[list[Example], BuildCounts]:
    """Examples of every trajectory (see `render.trajectory_examples`) and counts for the log.
    `use_token_ids` may be a predicate choosing the trajectories whose recorded ids to use (e.g.
    `sampled_by(t, tokenizer)`). A chat template that cannot give exact masks raises
    `ChatTemplateError` naming the task."""
    examples: list[Example] = []
    counts = BuildCounts()
    for t in trajs:
        counts.trajectories += 1
        ids = use_token_ids(t) if callable(use_token_ids) else use_token_ids
        if not (ids and has_token_ids(t)) and not any(m.get("role") == "assistant" for m in t.messages):
            counts.no_assistant += 1
            continue
        try:
            made = trajectory_examples(
                tokenizer,
                t,
                chat_template=chat_template,
                max_length=max_length,
                truncation=truncation,
                use_token_ids=ids,
            )
        except ChatTemplateError as exc:
            problem = exc.problems[0]
            raise ChatTemplateError(
                f"trajectory of task {task_key(t) or '?'}: {problem.what}", hint=problem.hint
            ) from None
        if not made:
            counts.too_long += 1
        for ex in made:
            counts.examples += 1
            counts.from_token_ids += ex.from_token_ids
            counts.truncated += ex.dropped_turns > 0
            counts.split_boundaries += ex.split_boundaries
            counts.trained_tokens += ex.trained_tokens
        examples += made
    return examples, counts


def sampled_by(t: Trajectory, tokenizer: Any) -> bool:
    """Whether `t`'s recorded token ids come from the model of `tokenizer`: its policy's `model` is
    the tokenizer's name or folder (`embedded` standing for the embedded model's folder). Ids from
    another model mean nothing to this one, even when they fall inside its vocabulary."""
    model = str((t.policy or {}).get("model") or "")
    name = str(getattr(tokenizer, "name_or_path", "") or "")
    if not model or not name:
        return False
    if model == "embedded":
        model = str(cache_dir() / "models" / EMBEDDED_NAME)
    return model == name or (
        Path(model).expanduser().exists() and Path(model).expanduser().resolve() == Path(name).expanduser().resolve()
    )


def examples_from_sources(
    sources: Sequence[Path | str],
    tokenizer: Any,
    *,
    data: dict[str, Any],
    chat_template: str | None = None,
    seed: int = 0,
    truncation: Truncation = "turns",
) -> tuple[list[Example], dict[str, int]]:
    """The training examples of a Train spec's `data` section (sources, min_reward, statuses,
    dedupe, max_per_task, max_length), and flat counts of what was kept and dropped, for the log.
    Recorded token ids are used for trajectories sampled by this very model (`sampled_by`)."""
    kept = select(
        load_trajectories(sources),
        min_reward=data.get("min_reward", 1.0),
        statuses=data.get("statuses", ("passed",)),
        dedupe=data.get("dedupe", True),
        max_per_task=data.get("max_per_task"),
        seed=seed,
    )
    examples, built = build_examples(
        kept,
        tokenizer,
        chat_template=chat_template,
        max_length=int(data.get("max_length", 2048)),
        truncation=truncation,
        use_token_ids=lambda t: sampled_by(t, tokenizer),
    )
    sel = kept.counts
    counts = {
        "trajectories": sel.seen,
        "selected": sel.kept,
        **{f"dropped_{k}": v for k, v in sel.dropped().items()},
        **{k: v for k, v in asdict(built).items() if k != "trajectories"},
    }
    return examples, counts
