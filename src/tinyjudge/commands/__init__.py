"""The command line's verbs, one module each (``tinyjudge.cli`` is their table).

A verb reads the paths it is given, resolves the rubric once
(:func:`~tinyjudge.commands._io.resolve_rubric`: a built-in name or a YAML
path), calls the stage libraries on records in memory, and prints. Nothing
below this layer prints to the terminal or parses command-line options.
"""

from tinyjudge._faces import lazy_names

from ._config_flags import flag_of as flag_of
from ._io import err as err

_, __dir__ = lazy_names(__name__)
