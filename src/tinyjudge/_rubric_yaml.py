"""Finding and reading rubric YAML files: the lookup path and the bounds on a file."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tinyjudge.errors import RubricError

__all__ = [
    "MAX_RUBRIC_BYTES",
    "MAX_RUBRIC_NODES",
    "rubric_dirs",
    "list_rubrics",
    "locate_rubric",
    "read_bounded",
    "parse_bounded",
    "load_yaml_bounded",
]

# A rubric is prose and a few worked examples: these bounds are far above any real one,
# and keep a hostile file (a YAML alias bomb expands 3.5 KB into billions of nodes)
# from taking the machine's memory.
MAX_RUBRIC_BYTES = 1 << 20
MAX_RUBRIC_NODES = 100_000


def rubric_dirs() -> list[Path]:
    """Where built-in rubrics are looked up: ``$TINYJUDGE_RUBRICS``, then the repo's."""
    dirs = []
    if env := os.environ.get("TINYJUDGE_RUBRICS"):
        dirs += [Path(d) for d in env.split(os.pathsep) if d]
    here = Path(__file__).resolve().parent
    # A source checkout (or editable install) reads the repository's rubrics/; a wheel
    # carries the same files in the package.
    dirs += [here.parents[1] / "rubrics", here / "_shipped" / "rubrics"]
    return dirs


def list_rubrics() -> list[str]:
    """Names of the built-in rubrics."""
    names: set[str] = set()
    for d in rubric_dirs():
        names.update(p.stem for p in d.glob("*.yaml"))
    return sorted(names)


def locate_rubric(name_or_path: str | os.PathLike[str]) -> Path:
    p = Path(name_or_path)
    # A folder that happens to share a rubric's name (an import's --out, say) is not a rubric.
    if p.suffix in {".yaml", ".yml"} or p.is_file():
        if not p.exists():
            raise RubricError(f"{p}: no such rubric file")
        return p
    for d in rubric_dirs():
        cand = d / f"{name_or_path}.yaml"
        if cand.exists():
            return cand
    raise RubricError(
        f"unknown rubric {str(name_or_path)!r}; built-in rubrics are {list_rubrics()}, "
        "or pass a path to a .yaml file"
    )


def read_bounded(path: Path) -> bytes:
    """The file's bytes, refused past :data:`MAX_RUBRIC_BYTES` without reading the rest."""
    with path.open("rb") as fh:
        data = fh.read(MAX_RUBRIC_BYTES + 1)
    if len(data) > MAX_RUBRIC_BYTES:
        raise RubricError(
            f"{path}: a rubric file may hold at most {MAX_RUBRIC_BYTES:,} bytes; this one "
            "is larger: keep the rubric to its prose and a few short examples"
        )
    return data


def parse_bounded(path: Path, text: str) -> Any:
    """The YAML document in ``text``, refused when its aliases expand past the node bound.

    PyYAML composes an alias as a second reference to one node, so composing is
    cheap; what comes after walks the expanded tree (merge keys ``<<`` are
    flattened while the document is built; validation, hashing and the prompt
    walk the values). So the composed graph is counted first, each node as often
    as it appears, stopping at :data:`MAX_RUBRIC_NODES`: the count costs no more
    than a rubric at the limit, and only a document within it is built.
    """

    def too_big() -> RubricError:
        return RubricError(
            f"{path}: the rubric expands to more than {MAX_RUBRIC_NODES:,} YAML nodes "
            "(each alias such as *name repeats all it points at); write it out "
            "without nested aliases"
        )

    return load_yaml_bounded(text, too_big)


def load_yaml_bounded(
    text: str,
    too_big: Callable[[], Exception],
    *,
    loader: type[yaml.SafeLoader] = yaml.SafeLoader,
    limit: int = MAX_RUBRIC_NODES,
) -> Any:
    """The YAML document in ``text``, built only when it expands to at most ``limit`` nodes.

    Every reader of a user's YAML (rubrics, exploit edits, panels) goes through here, so
    an alias bomb is refused before anything expands it (building the document, or an
    error message that quotes a value).

    Args:
        text: the YAML text.
        too_big: the error raised when the document expands past ``limit`` nodes.
        loader: a :class:`yaml.SafeLoader` subclass (one that keeps lines, say).
        limit: the most nodes, each alias counted as often as it repeats.

    Raises:
        yaml.YAMLError: text that is not YAML (the caller says where).
    """
    parser = loader(text)
    try:
        root = parser.get_single_node()
        if root is None:
            return None
        _check_expansion(root, limit, too_big)
        return parser.construct_document(root)
    finally:
        parser.dispose()


def _check_expansion(root: yaml.Node, limit: int, too_big: Callable[[], Exception]) -> None:
    count = 0
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        count += 1
        if count > limit:
            raise too_big()
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack += (key, value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
