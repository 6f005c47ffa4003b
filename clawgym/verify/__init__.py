"""Verification: grade a final workspace and combine the checks into a Verdict.

- `grade.py`: the in-process core (run the checks, combine, the hybrid rubric weighting);
- `client.py`: `verify` / `verify_task`, which send the request to a fresh verifier process;
- `server.py`: the fork server those verifiers come from (one per runner, checks preloaded);
- `worker.py`: what a verifier does with one request (`python -m clawgym.verify.worker` runs it
  once from stdin).
"""

from .client import verify, verify_task
from .grade import (CheckTimeout, Verdict, combine, combine_hybrid, grading_budget, run_checks)

__all__ = ["CheckTimeout", "Verdict", "combine", "combine_hybrid", "grading_budget", "run_checks", "verify",
           "verify_task"]
