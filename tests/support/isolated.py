"""Run a converted model on a GPU backend in a child interpreter and bring its outputs back.

Why: PoCL (OpenCL) and Mesa's lavapipe (Vulkan) both compile with Debian's LLVM 15 inside the test process. In
three CI runs (sessions 10 and 11) an OpenCL kernel run late in the suite, after the Vulkan tests, crashed in a
PoCL driver thread (SIGSEGV / SIGABRT, no Python frame), while the same tests pass alone and the OpenCL kernels
show no out-of-bounds access under Oclgrind. As with TensorFlow's LLVM (tests/converter/tensorflow/tf_jobs.py),
the late GPU checks therefore run in a fresh process; a crash there fails that test with its signal instead of
killing the whole run. The child uses exactly mnnpy's public API: `Interpreter` sessions or `nn` Modules.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

_ROOT = Path(__file__).resolve().parent.parent


def _child(job: dict[str, Any]) -> dict[str, Any]:
    sys.path.insert(0, str(_ROOT))
    import mnnpy

    if job["kind"] == "module":
        module = mnnpy.nn.load_module_from_file(job["path"], job["inputs"], job["outputs"],
                                              backend=getattr(mnnpy.expr.Backend, job["backend"].upper()))
        runs = []
        for feeds in job["runs"]:
            xs = [mnnpy.expr.const(feeds[name], list(feeds[name].shape)) for name in job["inputs"]]
            out = module.forward(xs)
            runs.append([np.array(v.read()) for v in (out if isinstance(out, list) else [out])])
        info = {"layers": module.runner.layers, "head": module.runner.split.head.session.main.name
                if module.runner.split is not None else None}
        module.runner.release()
        return {"runs": runs, "info": info}
    from support.runners import run

    return {"runs": [run(job["path"], feeds, job["outputs"], config={"backend": job["backend"]}, dim=None)
                     for feeds in job["runs"]]}


def run_isolated(job: dict[str, Any]) -> dict[str, Any]:
    """Run `job` ({"kind": "session" | "module", "path", "backend", "inputs", "outputs", "runs": [feeds, ...]})
    in a child interpreter; raise with its stderr (and the signal) when it fails."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "job.pkl", Path(tmp) / "result.pkl"
        src.write_bytes(pickle.dumps(job))
        proc = subprocess.run([sys.executable, __file__, str(src), str(dst)], capture_output=True, text=True,
                              timeout=600, check=False, cwd=str(_ROOT))
        if proc.returncode != 0:
            how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
            raise RuntimeError(f"{job['backend']} child run failed ({how}):\n{proc.stderr[-3000:]}")
        return pickle.loads(dst.read_bytes())


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    job_path, out_path = Path(sys.argv[1]), Path(sys.argv[2])
    out_path.write_bytes(pickle.dumps(_child(pickle.loads(job_path.read_bytes()))))
