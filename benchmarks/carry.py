"""What the GPU suite takes along to a machine that has no network and takes at most 64 MiB of
files per command: the embedded model's GGUF in checksummed parts, the wheels of the Python
packages that machine lacks, and a bubblewrap binary in case it has none (docs/gpu.md).

    python benchmarks/carry.py prepare            # .carry/part1, .carry/part2, .carry/wheels, then the budget
    python benchmarks/carry.py budget             # what each of the two commands takes along, against 64 MiB
    python benchmarks/carry.py join --out /tmp/cg/model.gguf /tmp/cg .carry/part2   # on the GPU machine

`join` checks every part's SHA-256 and the whole file's against the manifest written by
`prepare`, so a truncated or mixed-up part is an error that says which, never a broken model.
Only the standard library is used, so `join` runs before anything is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MiB = 1024 * 1024
LIMIT = 64 * MiB  # what one command may take along: working tree + carried paths
MANIFEST = "manifest.json"
# Python 3.12 manylinux x86_64 wheels of what the GPU machine lacks (it has torch, transformers,
# accelerate, peft, numpy, scipy, pandas, pyarrow, pyyaml, jinja2, click, rich, attrs, xxhash...);
# pinned to the versions tested here, one version each
WHEELS = [
    "trl==1.16.0",
    "liger-kernel==0.8.5",
    "datasets==5.2.0",
    "dill==0.4.1",
    "multiprocess==0.70.19",  # part a
    "gguf==0.19.0",  # reading the embedded model's GGUF
    "jsonschema==4.26.0",
    "jsonschema-specifications==2025.9.1",
    "referencing==0.37.0",
    "rpds-py==0.30.0",
    "datasketch==2.0.0",
    "rank-bm25==0.2.2",  # clawgym's own requirements there
]
PLATFORMS = [
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
]


class CarryError(Exception):
    """A user-facing problem with the parts or the budget."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(4 * MiB), b""):
            digest.update(block)
    return digest.hexdigest()


def split(source: Path, dest: Path, parts: int) -> dict:
    """Cut `source` into `parts` nearly equal pieces, `dest/partN/NAME.partN`, each folder with the
    manifest (sizes and SHA-256 of every part and of the whole)."""
    size = source.stat().st_size
    chunk = -(-size // parts)
    manifest = {"name": source.name, "size": size, "sha256": sha256(source), "parts": []}
    folders = []
    with source.open("rb") as fh:
        for i in range(1, parts + 1):
            folder = dest / f"part{i}"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            piece = folder / f"{source.name}.part{i}"
            with piece.open("wb") as out:
                remaining = chunk
                while remaining > 0:
                    block = fh.read(min(4 * MiB, remaining))
                    if not block:
                        break
                    out.write(block)
                    remaining -= len(block)
            manifest["parts"].append({"file": piece.name, "size": piece.stat().st_size, "sha256": sha256(piece)})
            folders.append(folder)
    for folder in folders:
        (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return manifest


def join(folders: list[Path], out: Path) -> Path:
    """Reassemble the parts found in `folders` into `out`, checking every checksum."""
    manifests = [json.loads((f / MANIFEST).read_text()) for f in folders if (f / MANIFEST).is_file()]
    if not manifests:
        raise CarryError(f"no {MANIFEST} in {', '.join(map(str, folders))}: give the folders the parts were copied to")
    manifest = manifests[0]
    if any(m["sha256"] != manifest["sha256"] for m in manifests):
        raise CarryError(
            "the folders hold parts of different files (their manifests differ): "
            "prepare the parts again and carry them from one `prepare`"
        )
    pieces = []
    for part in manifest["parts"]:
        found = [f / part["file"] for f in folders if (f / part["file"]).is_file()]
        if not found:
            raise CarryError(
                f"part {part['file']} is in none of {', '.join(map(str, folders))}; "
                "was the first command's copy to /tmp lost (the machine went back between calls)?"
            )
        piece = found[0]
        if piece.stat().st_size != part["size"] or sha256(piece) != part["sha256"]:
            raise CarryError(
                f"{piece}: size or SHA-256 differs from the manifest (expected {part['size']} bytes, "
                f"sha256 {part['sha256'][:12]}...): copy that part again"
            )
        pieces.append(piece)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("wb") as fh:
        for piece in pieces:
            with piece.open("rb") as src:
                shutil.copyfileobj(src, fh, 4 * MiB)
    if sha256(tmp) != manifest["sha256"]:
        tmp.unlink()
        raise CarryError(f"the reassembled {manifest['name']} does not match its SHA-256: prepare the parts again")
    tmp.replace(out)
    return out


def download_wheels(dest: Path) -> list[Path]:
    """The wheels for Python 3.12 manylinux x86_64 (pip download, no dependencies), and wheels.txt."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        "3.12",
        "--implementation",
        "cp",
        *[a for p in PLATFORMS for a in ("--platform", p)],
        "-d",
        str(dest),
        *WHEELS,
    ]
    subprocess.run(cmd, check=True)
    (dest.parent / "wheels.txt").write_text("\n".join(WHEELS) + "\n")
    return sorted(dest.glob("*.whl"))


def tree_bytes() -> int:
    """Bytes of the working tree that travels: tracked files and untracked files git does not ignore."""
    names = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    return sum((ROOT / n).stat().st_size for n in names if n and (ROOT / n).is_file() and not (ROOT / n).is_symlink())


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def budget(carry: Path) -> list[dict]:
    """What each command takes along (the working tree, one model part, the wheels and tools)."""
    tree, common = tree_bytes(), folder_bytes(carry / "wheels") + folder_bytes(carry / "bin")
    rows = []
    for part in sorted(carry.glob("part*")):
        total = tree + folder_bytes(part) + common
        rows.append(
            {
                "call": part.name,
                "tree": tree,
                "part": folder_bytes(part),
                "wheels_and_tools": common,
                "total": total,
                "fits": total <= LIMIT,
            }
        )
    return rows


def print_budget(rows: list[dict]) -> bool:
    print(f"{'call':6} {'tree MiB':>9} {'part MiB':>9} {'wheels MiB':>11} {'total MiB':>10}  (limit 64 MiB)")
    for r in rows:
        print(
            f"{r['call']:6} {r['tree'] / MiB:>9.1f} {r['part'] / MiB:>9.1f} {r['wheels_and_tools'] / MiB:>11.1f} "
            f"{r['total'] / MiB:>10.1f}  {'fits' if r['fits'] else 'TOO LARGE'}"
        )
    return all(r["fits"] for r in rows)


def prepare(carry: Path, parts: int, wheels: bool) -> bool:
    sys.path.insert(0, str(ROOT))
    from clawgym.policy.embedded import gguf_source

    source = gguf_source()
    manifest = split(source, carry, parts)
    print(f"{source.name}: {manifest['size'] / MiB:.1f} MiB in {parts} parts, sha256 {manifest['sha256'][:16]}...")
    if wheels:
        found = download_wheels(carry / "wheels")
        print(f"{len(found)} wheels, {sum(p.stat().st_size for p in found) / MiB:.1f} MiB in {carry / 'wheels'}")
    bwrap = shutil.which("bwrap")
    if bwrap:  # used there only if the machine has none of its own
        (carry / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy2(bwrap, carry / "bin" / "bwrap")
    return print_budget(budget(carry))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="split the model, fetch the wheels, check the budget")
    p.add_argument("--dest", type=Path, default=ROOT / ".carry")
    p.add_argument("--parts", type=int, default=2)
    p.add_argument("--no-wheels", action="store_true", help="only split the model")
    b = sub.add_parser("budget", help="what each command takes along, against 64 MiB")
    b.add_argument("--dest", type=Path, default=ROOT / ".carry")
    j = sub.add_parser("join", help="reassemble the parts (checksums checked)")
    j.add_argument("folders", nargs="+", type=Path)
    j.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    try:
        if args.command == "prepare":
            ok = prepare(args.dest, args.parts, not args.no_wheels)
        elif args.command == "budget":
            ok = print_budget(budget(args.dest))
        else:
            out = join(args.folders, args.out)
            print(f"{out}: {os.path.getsize(out) / MiB:.1f} MiB, checksums match")
            ok = True
    except CarryError as exc:
        print(f"carry: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if not ok:
        print(
            "carry: a command would take more than 64 MiB along: split the model into more parts "
            "(--parts 3; one more command) or leave untracked files out of the working tree",
            file=sys.stderr,
        )
        raise SystemExit(1)


if __name__ == "__main__":
    main()
