"""A synth run: sample candidates, make and filter them in worker processes, remove near-duplicates,
write the dataset. Interrupting loses nothing accepted; running again with `resume` continues."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import ClawgymError
from ..sandbox.host import confine_worker, sweep_worker_cgroups
from .dataset import Dataset
from .dedup import DedupIndex, signature
from .compose.heldout import check_region, load_region
from .compose.route import ComposeFamily, compose_families, make_from_compose
from .families import Family, family_files, load_families
from .make import Made, graded_filters, make_from_family, spec_dedup_text
from .sample import Balancer, Candidate
from .spec import SynthSpec
from .split import assign_splits
from .taxonomy import load_taxonomy

MAX_TRIES_PER_TASK = 4  # give up when rejections make the target unreachable
WORKER_MEMORY = 4 << 30  # one memory cgroup per worker process bounds its trials' sandboxes together


@dataclass
class SynthEvents:
    on_start: Callable[[int, int], None] = lambda target, done: None
    on_result: Callable[[Made, bool], None] = lambda made, accepted: None


@dataclass
class SynthSummary:
    out: Path
    target: int
    accepted: int = 0
    rejected: int = 0
    duplicates: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    stopped: str | None = None
    exhausted: list[str] = field(default_factory=list)


def _workers(jobs: int) -> int:
    return jobs or (os.cpu_count() or 1) + 1


def _confine_worker() -> None:
    """A worker runs one candidate's trials at a time: its own memory cgroup bounds them all, so the
    trials' sandboxes need no cgroup move per exec (see `sandbox.host.confine_worker`)."""
    confine_worker("synth", WORKER_MEMORY)
    from multiprocessing.util import Finalize

    from ..verify.connection import shutdown

    Finalize(None, shutdown, exitpriority=10)  # the worker's verifier server leaves with it, so its cgroup can go


def _restore(dataset: Dataset, balancer: Balancer, index: DedupIndex, families: dict[str, Family]) -> int:
    """Count what the dataset already holds; returns the number of accepted tasks."""
    import yaml

    accepted = dataset.accepted()
    for rec in accepted:
        src = rec.get("source", {})
        fam = src.get("family")
        if fam in families:
            c = Candidate(rec["route"], fam, rec["persona"], rec["seed"], rec["category"], rec["subcategory"])
            balancer.take(c)
        spec = yaml.load((dataset.root / rec["path"]).read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        index.add(rec["name"], signature(spec_dedup_text(spec), index.settings))
    for rec in dataset.rejected():
        fam = (rec.get("source") or {}).get("family")
        if fam in families and rec.get("seed") is not None:
            balancer.mark_used(fam, int(rec["seed"]))
    return len(accepted)


def _against(spec: SynthSpec, index: DedupIndex) -> None:
    """Index the tasks new ones must not duplicate (e.g. the benchmark, the training seeds)."""
    if not spec.dedup_against:
        return
    from .against import against_signatures

    for key, sig in against_signatures(
        spec.dedup_against, spec.folder, index.settings, jobs=max(1, _workers(spec.jobs) - 1)
    ):
        index.add(key, sig)


def _by_name(paths: list[Path]) -> dict[str, Path]:
    """Each family file by the name it gives itself (read, not checked)."""
    from ..spec.load import load_file

    names = {}
    for path in paths:
        try:
            names[str(load_file(path).data.get("name"))] = path
        except (ClawgymError, AttributeError):
            continue
    return names


def _family_named(names: dict[str, Path], name: str) -> list[Path]:
    """The family file whose spec is called `name` (other families are not loaded, nor checked)."""
    if name not in names:
        from ..errors import did_you_mean

        raise ClawgymError(
            f"no task family named {name!r}", hint=did_you_mean(name, list(names)) or "see 'families' in the spec"
        )
    return [names[name]]


def all_families(spec: SynthSpec, taxonomy: Any, only_family: str | None) -> list[Any]:
    """The hand-written families and the compose families on this spec's side of the held-out region."""
    region = load_region(spec.heldout)
    paths = family_files(spec.families, spec.folder)
    if not paths and not spec.compose:
        raise ClawgymError(
            f"no task family matches {', '.join(spec.families)} (relative to {spec.folder})",
            hint="check the 'families' globs of the synth spec",
        )
    composed: list[ComposeFamily] = []
    if spec.compose:
        composed = compose_families(spec.compose["catalog"], spec.compose["weight"], region, spec.region, taxonomy)
    by_name = _by_name(paths) if only_family else {}
    if only_family:
        hit = [f for f in composed if f.name == only_family]
        if hit:
            return hit
        paths = _family_named(by_name, only_family)
    hand = load_families(paths, taxonomy) if paths else []
    if spec.compose:  # the region is checked against every family the spec names, not just --family's
        from .compose.catalog import load_catalog

        names = set(by_name) if only_family else {f.name for f in hand}
        check_region(region, load_catalog(str(spec.compose["catalog"])), names)
    if only_family:
        if hand and region.hand_family_side(hand[0].name) != spec.region:
            raise ClawgymError(
                f"family {only_family!r} lies on the {region.hand_family_side(hand[0].name)} side of "
                f"the held-out region ({region.file}); this spec draws only from the {spec.region} side",
                hint="use a spec of that side (region: heldout is specs/synth/bench-v2.yaml)",
            )
        return hand
    hand = [f for f in hand if region.hand_family_side(f.name) == spec.region]
    families = hand + composed
    if not families:
        raise ClawgymError(
            f"no task family lies on the {spec.region} side of the held-out region {region.file}",
            hint="check `region:` and the held-out file",
        )
    return families


def synthesize(
    spec: SynthSpec,
    *,
    resume: bool = False,
    only_family: str | None = None,
    events: SynthEvents | None = None,
    sandbox: dict | None = None,
) -> SynthSummary:
    """Run the synthesis described by `spec` into `spec.out`."""
    events = events or SynthEvents()
    started = time.monotonic()
    taxonomy = load_taxonomy(spec.taxonomy)
    families = all_families(spec, taxonomy, only_family)
    region = load_region(spec.heldout)
    by_name = {f.name: f for f in families}
    splits = assign_splits([(f.name, f.category) for f in families], spec.split, spec.seed) if spec.split else {}
    settings = {
        "spec_file": spec.doc.file,
        "spec_sha256": spec.sha256,
        "seed": spec.seed,
        "split": spec.split,
        "family": only_family,
    }
    dataset = Dataset.create(spec.out, settings, spec.library_root, resume=resume)
    dataset.write_run_spec(spec.doc.data["name"])
    balancer = Balancer(families, spec.routes, spec.category_shares, spec.seed, seed_start=spec.seed_start)
    index = DedupIndex(spec.dedup)
    summary = SynthSummary(spec.out, spec.count)
    summary.accepted = _restore(dataset, balancer, index, by_name)
    _against(spec, index)
    events.on_start(spec.count, summary.accepted)
    jobs = _workers(spec.jobs)
    budget = max(spec.count * MAX_TRIES_PER_TASK, 50)
    tried = 0
    ungraded = dataclasses.replace(spec.filters, trials=False)
    llm = _LlmRoute(spec, taxonomy, dataset) if spec.llm else None
    ctx = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_confine_worker)
    in_flight: dict[Future, Candidate] = {}
    try:
        while summary.accepted < spec.count or in_flight:
            while summary.accepted + len(in_flight) < spec.count and len(in_flight) < jobs * 2 and tried < budget:
                try:
                    c = balancer.next()
                except LookupError as exc:
                    summary.stopped = str(exc)
                    break
                fam = by_name[c.family]
                rel_dir = "tasks/" + (f"{splits[c.family]}/" if splits else "") + c.category
                if isinstance(fam, ComposeFamily):
                    fut = pool.submit(
                        make_from_compose,
                        c,
                        fam,
                        region,
                        spec.region,
                        spec.out.resolve(),
                        rel_dir,
                        ungraded,
                        spec.dedup,
                        sandbox,
                    )
                elif llm is not None and llm.wants_next(tried):
                    fut = llm.submit(c, fam, rel_dir, spec, sandbox)
                else:  # first phase: generate and check validity; the trials come after dedup
                    fut = pool.submit(
                        make_from_family, c, fam.path, spec.out.resolve(), rel_dir, ungraded, spec.dedup, sandbox
                    )
                in_flight[fut] = c
                tried += 1
            if not in_flight:
                summary.stopped = summary.stopped or (
                    f"stopped after {tried} candidates: too many were rejected to reach {spec.count} tasks"
                )
                break
            done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
            for fut in done:
                c = in_flight.pop(fut)
                made = fut.result()
                if made.ok and not made.graded:  # passed generation: dedup now, then the trials
                    dup = index.find(made.signature)
                    if dup is None:
                        index.add(made.name, made.signature)  # reserved; removed again if a trial fails
                        in_flight[pool.submit(graded_filters, made, spec.filters, sandbox)] = c
                        continue
                    made.error = f"dedup: near-duplicate of {dup[0]} (estimated similarity {dup[1]:.2f})"
                    made.filters = {**made.filters, "passed": False, "dedup": False, "failed": "dedup"}
                    summary.duplicates += 1
                _settle(made, c, dataset, index, balancer, summary, splits, events, spec.count)
    finally:
        for fut in in_flight:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        sweep_worker_cgroups()
        if llm is not None:
            llm.close()
        dataset.close()
        summary.exhausted = sorted(balancer.exhausted)
        summary.seconds = time.monotonic() - started
    return summary


class _LlmRoute:
    """The LLM route: requests built from the sampler's persona and scenario (skills and workspace
    borrowed from the family chosen for them), written by the policy in threads of this process."""

    def __init__(self, spec: SynthSpec, taxonomy: Any, dataset: Dataset):
        from .llm import LlmWriter

        self.writer = LlmWriter.from_spec(spec.llm, spec.folder, spec.library_root)
        self.share = float(spec.llm.get("share", 1.0))
        self.taxonomy = taxonomy
        self.threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="synth-llm")
        done = [r for r in dataset.accepted() + dataset.rejected() if r.get("route") == "llm"]
        self.sequence = 1 + max((int(r.get("seed") or 0) for r in done), default=-1)
        self.submitted = 0

    def wants_next(self, tried: int) -> bool:
        return self.submitted < self.share * (tried + 1) - 1e-9

    def submit(self, c: Candidate, fam: Family, rel_dir: str, spec: SynthSpec, sandbox: dict | None) -> Future:
        from .llm import LlmRequest, make_from_llm

        scenario = self.taxonomy.scenario(c.category, c.subcategory)
        request = LlmRequest(
            name="",
            persona=c.persona,
            category=c.category,
            subcategory=c.subcategory,
            scenario=scenario.description if scenario else "",
            intents=scenario.intents if scenario else (),
            skills=fam.skills,
            workspace=fam.data["workspace"],
            seed=self.sequence,
        )
        request = dataclasses.replace(request, name=f"{request.family}-{self.sequence:05d}")
        self.sequence += 1
        self.submitted += 1
        return self.threads.submit(
            make_from_llm, request, self.writer, spec.out.resolve(), rel_dir, spec.filters, spec.dedup, sandbox
        )

    def close(self) -> None:
        self.threads.shutdown(wait=True, cancel_futures=True)


def _settle(
    made: Made,
    c: Candidate,
    dataset: Dataset,
    index: DedupIndex,
    balancer: Balancer,
    summary: SynthSummary,
    splits: dict[str, str],
    events: SynthEvents,
    target: int,
) -> None:
    """Accept or reject one finished candidate."""
    m = made.candidate  # for the LLM route, `c` is the family whose scenario it was given
    record: dict[str, Any] = {
        "name": made.name,
        "route": m.route,
        "persona": m.persona,
        "seed": m.seed,
        "category": m.category,
        "subcategory": m.subcategory,
        **({"split": splits[c.family]} if splits else {}),
        **made.meta,
        "filters": made.filters,
    }
    record.setdefault("source", {"family": m.family})
    reserved = made.name in index
    if made.ok and summary.accepted >= target:
        made.error = "not needed: the target was already reached"
    if made.ok and not reserved:
        dup = index.find(made.signature)
        if dup is not None:
            made.error = f"dedup: near-duplicate of {dup[0]} (estimated similarity {dup[1]:.2f})"
            record["filters"] = {**made.filters, "passed": False, "dedup": False, "failed": "dedup"}
            summary.duplicates += 1
    if made.ok:
        record["filters"] = {**made.filters, "dedup": True}
        dataset.accept(made.path, made.text or "", record)
        if not reserved:
            index.add(made.name, made.signature)
        balancer.outcome(c, False)
        summary.accepted += 1
    else:
        if reserved:
            index.remove(made.name)
        record["filters"] = made.filters
        record["reason"] = made.error
        dataset.reject(record)
        balancer.release(c)
        balancer.outcome(c, made.error.startswith("dedup:"))
        summary.rejected += 1
        kind = str(made.error).split(":", 1)[0]
        summary.reasons[kind] = summary.reasons.get(kind, 0) + 1
    events.on_result(made, made.ok)
