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

from . import _calibration, _change, _record
from ._calibration import *  # noqa: F403
from ._change import *  # noqa: F403
from ._record import *  # noqa: F403

# the face is its modules' public names, listed once there
__all__ = [*_calibration.__all__, *_change.__all__, *_record.__all__]
