"""Verification: grade a final workspace and combine the checks into a Verdict.

- `grade.py`: the in-process core (run the checks, combine, the hybrid rubric weighting);
- `request.py`: `VerifyRequest`, what to grade and against what (`VerifyRequest.for_task`);
- `client.py`: `send` (a request), `verify` (the same, field by field) and `verify_task`, which
  send the request to a fresh verifier process;
- `server.py`: the fork server those verifiers come from (one per runner, checks preloaded);
- `worker.py`: what a verifier does with one request (`python -m clawgym.verify.worker` runs it
  once from stdin);
- `judge.py`: the rubric judge (a model scores the rubric; cached); `evidence.py`: what the judge is
  shown of the agent's work, enclosed as untrusted data.
"""

from .client import send, verify, verify_task
from .grade import CheckTimeout, Verdict, combine, combine_hybrid, grading_budget, run_checks
from .request import VerifyRequest

__all__ = [
    "CheckTimeout",
    "Verdict",
    "VerifyRequest",
    "combine",
    "combine_hybrid",
    "grading_budget",
    "run_checks",
    "send",
    "verify",
    "verify_task",
]
