"""The conversion progress bar (tqdm) over the source model's nodes while the frontend converts them.

Shown when asked for, or by default (`enabled=None`) when stderr is a terminal and the model has at least
`AUTO_MIN_NODES` nodes; `mnnpy convert -q` / `--noProgress` turn it off. It never writes to stdout, so the closing
summary stays the last line there.
"""

from __future__ import annotations

import sys
from typing import Any

AUTO_MIN_NODES = 300


def wanted(enabled: bool | None, nodes: int, stream: Any = None) -> bool:
    """Whether to show the bar for a model of `nodes` source nodes."""
    if enabled is not None:
        return enabled
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and nodes >= AUTO_MIN_NODES


class Progress:
    """A tqdm bar over `total` steps (a no-op when disabled)."""

    def __init__(self, total: int, enabled: bool, desc: str = "convert", stream: Any = None) -> None:
        self.bar: Any = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="op", file=sys.stderr if stream is None else stream,
                            leave=False, dynamic_ncols=True)

    def update(self, steps: int = 1) -> None:
        """Advance by `steps` source nodes."""
        if self.bar is not None:
            self.bar.update(steps)

    def close(self) -> None:
        """Remove the bar (the closing summary follows on stdout)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None

