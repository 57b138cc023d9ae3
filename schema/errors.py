"""The one exception type of the schema layer, re-exported as `mnnpy.ModelError`."""

from __future__ import annotations


class ModelError(ValueError):
    """A model file or buffer is malformed: the message names the file, the object and the byte offset."""
