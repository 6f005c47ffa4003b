"""Run: plans of trials (`plan.py`), one trial end to end (`trial.py`), the asyncio runner that
runs a plan with caps, retries and resume (`runner.py`), executors (`executors/`: local, Ray) and
the task lint the validator runs (`lint.py`).
"""

from ..moved import forwarder

# `clawgym.run` was one module until 0.2; its names still resolve here, with a warning
__getattr__ = forwarder(
    __name__,
    "clawgym.run.runner",
    [
        "MANIFEST",
        "RunEvents",
        "TRIALS",
        "execute",
        "load_records",
        "manifest",
        "package_versions",
        "pending_trials",
        "trial_timeout",
    ],
)
