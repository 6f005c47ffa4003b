"""Compile: a task spec and a seed become a frozen `Task` (`compiler.py`: loading and validating
the spec in `task_spec.py`, compiling one instance in `instance.py`), many at once in parallel
(`batch.py`); `workspace.py` materialises a Task's files and diffs a final workspace.
"""

from ..moved import forwarder

# `clawgym.compile` was one module until 0.2; its names still resolve here, with a warning
__getattr__ = forwarder(
    __name__,
    "clawgym.compile.compiler",
    [
        "BOOTSTRAP_FILES",
        "DEFAULT_LIMITS",
        "PERSONA_DEFAULTS",
        "STEP_KINDS",
        "TaskSpec",
        "compile_task",
        "load_task_spec",
    ],
)
