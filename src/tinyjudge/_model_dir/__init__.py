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

from tinyjudge._faces import lazy_names

from ._calibration import bind_calibration as bind_calibration
from ._calibration import check_calibration as check_calibration
from ._calibration import model_identity as model_identity
from ._calibration import model_rubric as model_rubric
from ._change import ModelDirUpdate as ModelDirUpdate
from ._change import save_model_dir as save_model_dir
from ._change import update_model_dir as update_model_dir
from ._change import write_calibration as write_calibration
from ._record import BOUND_BY_ITSELF as BOUND_BY_ITSELF
from ._record import CALIBRATION_FILE as CALIBRATION_FILE
from ._record import CARD_FILE as CARD_FILE
from ._record import FORMAT as FORMAT
from ._record import FORMAT_VERSION as FORMAT_VERSION
from ._record import META_FILE as META_FILE
from ._record import READ_ONLY_VERSION as READ_ONLY_VERSION
from ._record import ModelFileError as ModelFileError
from ._record import check as check
from ._record import check_files as check_files
from ._record import identity_sha256 as identity_sha256
from ._record import is_model_dir as is_model_dir
from ._record import listed_files as listed_files
from ._record import read_meta as read_meta
from ._record import read_record as read_record
from ._record import write_json as write_json
from ._record import write_meta as write_meta
from ._record import write_text as write_text

_, __dir__ = lazy_names(__name__)
