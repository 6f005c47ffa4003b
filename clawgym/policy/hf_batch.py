"""Generation for the `hf` policy: one shared `generate_rows`, and `BatchedGenerator`, which runs
the concurrent `complete` calls of many trials (threads of one process) on one model as batches.

Why batch: in RL rollouts dozens of trials query the same in-process model, one turn each; one
`generate` call per turn leaves a GPU mostly idle, while a batch of N prompts costs little more
than one. Requests are grouped by their generation settings (temperature, top_p, max_tokens), the
prompts left-padded (attention mask 0 on the padding; transformers derives the position ids from
the mask, so a padded row sees the same positions as when alone) and generated in one call.

Per row, the result is what an unbatched call gives: the sampled ids up to and including the
first end token (the padding `generate` appends to rows that ended early is dropped), and
`logprobs[i] = log_softmax(logits_i / T)[ids[i]]` (T = 1 when greedy). Greedy tokens equal the
unbatched ones up to float rounding (padding changes the shapes of the matrix products, so a
near-tie between two tokens could flip); logprobs stay exact for the tokens sampled, which is
what RL needs. A per-call seed cannot be honoured in a batch (rows share one random stream).
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable

from .base import PolicyError

Key = tuple[float, float, int]  # (temperature, top_p, max_tokens) as generation uses them


def settings_key(temperature: float, top_p: float, max_tokens: int) -> Key:
    """The settings that decide which requests may share a batch (greedy ignores top_p)."""
    temperature = float(temperature)
    return (temperature, float(top_p) if temperature > 0 else 1.0, int(max_tokens))


@dataclass
class Generated:
    """One row's output: sampled ids (ending with an end token unless cut by max_tokens) and
    one log-probability per id."""

    token_ids: list[int]
    logprobs: list[float]


def generate_rows(
    libs: dict[str, Any],
    model: Any,
    device: str,
    eos_ids: list[int],
    name: str,
    prompts: list[list[int]],
    key: Key,
    seed: int | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> list[Generated]:
    """Generate from `prompts` (left-padded into one batch) with one `model.generate` call, the
    caller holding the model's lock; `should_stop()` true ends every row at its next token. CUDA OOM
    becomes PolicyError (`name` is the model's, for the message); other errors propagate."""
    torch, GenerationConfig = libs["torch"], libs["GenerationConfig"]
    temperature, top_p, max_tokens = key
    do_sample = temperature > 0
    pad_id = eos_ids[0] if eos_ids else None
    gen = GenerationConfig(
        max_new_tokens=max_tokens,
        do_sample=do_sample,
        temperature=temperature if do_sample else 1.0,
        top_p=top_p,
        top_k=0,
        repetition_penalty=1.0,
        min_new_tokens=0,
        eos_token_id=eos_ids,
        pad_token_id=pad_id,
        output_logits=True,
        return_dict_in_generate=True,
    )
    width = max(len(p) for p in prompts)
    inputs = torch.full((len(prompts), width), pad_id or 0, dtype=torch.long)  # masked out: any id does
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        inputs[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt) :] = 1
    try:
        with torch.inference_mode():
            if seed is not None:
                torch.manual_seed(int(seed))
            criteria = [_Stop(should_stop, torch)] if should_stop is not None else None
            out = model.generate(
                input_ids=inputs.to(device),
                attention_mask=mask.to(device),
                generation_config=gen,
                stopping_criteria=criteria,
            )
            sampled = out.sequences[:, width:]
            scale = temperature if do_sample else 1.0
            # one step at a time: a (steps, batch, vocab) float32 stack would be large
            logprobs = torch.stack(
                [
                    torch.log_softmax(step.float() / scale, dim=-1).gather(1, sampled[:, t : t + 1])[:, 0]
                    for t, step in enumerate(out.logits)
                ],
                dim=1,
            )
    except torch.cuda.OutOfMemoryError as exc:
        raise PolicyError(f"hf model {name!r} ran out of GPU memory: {exc}") from None
    ends = set(eos_ids)
    results = []
    for ids, lps in zip(sampled.tolist(), logprobs.tolist()):
        stop = next((i + 1 for i, t in enumerate(ids) if t in ends), len(ids))
        results.append(Generated(ids[:stop], [float(x) for x in lps[:stop]]))
    return results


class _Stop:
    """A stopping criterion (transformers calls it after each token): every row ends once `stop()`."""

    def __init__(self, stop: Callable[[], bool], torch: Any):
        self.stop, self.torch = stop, torch

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        return self.torch.full((input_ids.shape[0],), bool(self.stop()), dtype=self.torch.bool, device=input_ids.device)


@dataclass
class _Request:
    prompt: list[int]
    key: Key
    future: Future = field(default_factory=Future)


class BatchedGenerator:
    """Collects `submit`ted prompts from many threads and generates them in batches on one
    background daemon thread (it never keeps the process alive, and one failing batch fails only
    its own callers). Counters `batches_run` and `rows_run` say how well batching works."""

    def __init__(
        self,
        run: Callable[[list[list[int]], Key], list[Generated]],
        lock: threading.Lock,
        max_batch: int,
        batch_wait_ms: float = 5.0,
    ):
        self._run, self._lock = run, lock
        self.max_batch, self.batch_wait_s = max(1, int(max_batch)), max(0.0, float(batch_wait_ms)) / 1000
        self.batches_run = self.rows_run = 0
        self._queue: queue.Queue[_Request | None] = queue.Queue()
        self._closed = False
        self._submit_lock = threading.Lock()  # nothing is queued behind close()'s end marker
        self._thread = threading.Thread(target=self._loop, name="hf-batch", daemon=True)
        self._thread.start()

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, prompt: list[int], key: Key) -> Future:
        """Queue one prompt; the future resolves to its `Generated` (or raises the batch's error)."""
        request = _Request(list(prompt), key)
        with self._submit_lock:
            if self._closed:
                raise PolicyError("the hf batch generator is closed")
            self._queue.put(request)
        return request.future

    def generate(self, prompt: list[int], key: Key) -> Generated:
        """Submit and wait."""
        return self.submit(prompt, key).result()

    def close(self) -> None:
        """Stop the thread once the requests already queued are done."""
        with self._submit_lock:
            if not self._closed:
                self._closed = True
                self._queue.put(None)

    def _collect(self, first: _Request) -> tuple[list[_Request], bool]:
        """`first` plus what arrives within the wait, up to max_batch; and whether close was asked."""
        batch, deadline = [first], time.monotonic() + self.batch_wait_s
        while len(batch) < self.max_batch:
            try:
                item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
        return batch, False

    def _loop(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is None:
                break
            batch, stop = self._collect(first)
            groups: dict[Key, list[_Request]] = {}
            for request in batch:
                groups.setdefault(request.key, []).append(request)
            for key, requests in groups.items():
                self._serve(key, requests)

    def _serve(self, key: Key, requests: list[_Request]) -> None:
        try:
            with self._lock:
                results = self._run([r.prompt for r in requests], key)
            self.batches_run += 1
            self.rows_run += len(requests)
        except BaseException as exc:  # noqa: BLE001 - every caller of the batch gets the error; the thread lives on
            for request in requests:
                if not request.future.done():
                    request.future.set_exception(exc)
            return
        for request, result in zip(requests, results):
            if not request.future.done():
                request.future.set_result(result)
