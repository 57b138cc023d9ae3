"""Child process for the hostile-input test: load every file in a folder, print one JSON line per file.

Run as `python hostile_runner.py FOLDER`. A crash (segfault, abort) of this process is what the parent looks for.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from mnnpy.schema import load_net

from mnnpy import ModelError


def main(folder: str) -> None:
    for path in sorted(Path(folder).iterdir()):
        start = time.perf_counter()
        try:
            load_net(path)
            outcome, message = "ok", ""
        except ModelError as exc:
            outcome, message = "ModelError", str(exc)
        except BaseException as exc:
            outcome, message = type(exc).__name__, str(exc)[:200]
        seconds = time.perf_counter() - start
        print(json.dumps({"file": path.name, "outcome": outcome, "seconds": seconds, "message": message}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
