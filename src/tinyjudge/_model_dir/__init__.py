"""The model directory's one owner: ``tinyjudge.json``, the file hashes, the card, the calibration.

A model directory holds a reward model's files (weights, sharded or not, with
their index; adapter files; config and tokenizer files; the rubric's stored
copy) and what was attached to it later (the card ``README.md``, the
calibration's plot, ONNX exports). ``tinyjudge.json`` records

- ``files``: the SHA-256 of every file of the model, listed from disk when it
  was saved. With the rest of the record (tier, classes, rubric, params, card
  data) they are the model's identity, whose hash is ``sha256``;
- ``attached``: the SHA-256 of every file written beside the model (the card,
  plots, exports), checked like the others but not part of the identity, so a
  calibration fitted before an export still applies after it.

``calibration.json`` is bound by itself: it carries its own content hash and
the identity of the model it was fitted to.

A check lists the directory from disk: a file added after the save (an extra
shard), removed or edited is refused in one line. Hidden files (``.DS_Store``,
an editor's swap file) are no part of a model and are left alone.

Every change is whole. :func:`save_model_dir` builds a new directory beside the
old one and swaps it in; :func:`update_model_dir` (calibrate, export) stages a
copy whose files are hard links to the old ones (no weights are copied), lets
the caller write into it, lists and hashes it again and swaps it in. A failed or
killed run leaves the previous directory as it was.

This package is on floor 0 so that ``calibrate`` (floor 2, which writes the
calibration) and ``distill`` (floor 3, which saves and loads models) both go
through it.
"""

from ._calibration import bind_calibration, check_calibration, model_identity, model_rubric
from ._change import ModelDirUpdate, save_model_dir, update_model_dir, write_calibration
from ._record import (
    CALIBRATION_FILE,
    CARD_FILE,
    FORMAT,
    FORMAT_VERSION,
    META_FILE,
    ModelFileError,
    check,
    check_files,
    identity_sha256,
    is_model_dir,
    listed_files,
    read_meta,
    read_record,
    write_meta,
)

__all__ = [
    "META_FILE",
    "CARD_FILE",
    "CALIBRATION_FILE",
    "FORMAT",
    "FORMAT_VERSION",
    "ModelFileError",
    "ModelDirUpdate",
    "identity_sha256",
    "is_model_dir",
    "read_record",
    "read_meta",
    "check_files",
    "check",
    "listed_files",
    "write_meta",
    "save_model_dir",
    "update_model_dir",
    "model_rubric",
    "model_identity",
    "bind_calibration",
    "check_calibration",
    "write_calibration",
]
