"""Near-duplicate removal: MinHash LSH (datasketch) over word shingles of a task's text.

A task's text is its instruction plus its input files (the first 4 KB of each, in path order):
two tasks are near-duplicates when they ask for the same thing over (nearly) the same files.
The estimated Jaccard similarity of their shingle sets at or above `threshold` (default 0.8,
3-word shingles, 128 permutations) marks the later one a duplicate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from ..errors import PrerequisiteError
from ..spec.task import Task

_WORD = re.compile(r"\w+")
FILE_CHARS = 4096
SCHEME = "affine32"  # datasketch's hashing scheme, fixed so signatures stay comparable


def datasketch_module() -> Any:
    try:
        import datasketch
    except ImportError:
        raise PrerequisiteError(
            "near-duplicate removal needs the datasketch package", hint="pip install 'clawgym[synth]'"
        ) from None
    return datasketch


@dataclass(frozen=True)
class DedupSettings:
    threshold: float = 0.8
    num_perm: int = 128
    shingle: int = 3

    @classmethod
    def from_spec(cls, data: dict[str, Any]) -> "DedupSettings":
        return cls(**{k: data[k] for k in ("threshold", "num_perm", "shingle") if k in data})


def task_text(task: Task, inputs: Iterable[str]) -> str:
    parts = [task.instruction]
    for path in sorted(inputs):
        parts.append(path + "\n" + task.files[path][:FILE_CHARS].decode("utf-8", "replace"))
    return "\n".join(parts)


def shingles(text: str, size: int) -> set[bytes]:
    words = _WORD.findall(text.lower())
    if len(words) <= size:
        return {" ".join(words).encode()}
    return {" ".join(words[i : i + size]).encode() for i in range(len(words) - size + 1)}


def signature(text: str, settings: DedupSettings) -> np.ndarray:
    """The MinHash hash values of `text` (a uint64 array; cheap to send between processes)."""
    m = datasketch_module().MinHash(num_perm=settings.num_perm, seed=1, scheme=SCHEME)
    m.update_batch(list(shingles(text, settings.shingle)))
    return m.hashvalues


class DedupIndex:
    """An LSH index of accepted tasks; `add` returns the key of a near-duplicate already there, if any."""

    def __init__(self, settings: DedupSettings):
        ds = datasketch_module()
        self.settings = settings
        self._lsh = ds.MinHashLSH(threshold=settings.threshold, num_perm=settings.num_perm)
        self._sigs: dict[str, Any] = {}

    def _minhash(self, values: np.ndarray) -> Any:
        return datasketch_module().MinHash(num_perm=self.settings.num_perm, seed=1, hashvalues=values, scheme=SCHEME)

    def find(self, values: np.ndarray) -> tuple[str, float] | None:
        """The most similar indexed key at or above the threshold, with its estimated similarity."""
        m = self._minhash(values)
        best = None
        for key in self._lsh.query(m):
            sim = m.jaccard(self._sigs[key])
            if sim >= self.settings.threshold and (best is None or sim > best[1]):
                best = (key, sim)
        return best

    def add(self, key: str, values: np.ndarray) -> None:
        m = self._minhash(values)
        self._lsh.insert(key, m)
        self._sigs[key] = m

    def remove(self, key: str) -> None:
        if key in self._sigs:
            self._lsh.remove(key)
            del self._sigs[key]

    def __contains__(self, key: str) -> bool:
        return key in self._sigs

    def __len__(self) -> int:
        return len(self._sigs)
