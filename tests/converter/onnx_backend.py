"""`onnx.backend.base.Backend`s over our converter + a runtime, and a crash-safe node-suite runner.

`prepare(model)` converts with mnnpy's converter; `run(inputs)` executes the .mnn in official MNN (`MnnBackend`) or in
mnnpy's own CPU session (`MnnpyBackend`). The runner executes node-suite cases in a worker subprocess so a native
crash in MNN costs one case, not the test session. Each runtime has its own expected-failure list.
`python -m tests.converter.onnx_backend [--runtime mnnpy] [--write-expected]` prints or rewrites a list.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

EXPECTED_FAILURES = {"official": Path(__file__).with_name("onnx_backend_expected_failures.txt"),
                     "mnnpy": Path(__file__).with_name("onnx_backend_expected_failures_mnnpy.txt")}
RTOL, ATOL = 1e-3, 1e-5
MARK = "@@case "


def node_data_dir() -> Path:
    """The node cases shipped inside the installed onnx wheel."""
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"


def _base() -> tuple[Any, Any]:
    from onnx.backend.base import Backend, BackendRep

    return Backend, BackendRep


Backend, BackendRep = _base()


class MnnRep(BackendRep):
    """A converted model ready to run in official MNN."""

    def __init__(self, path: Path, input_names: list[str], output_names: list[str]) -> None:
        self.path = path
        self.input_names = input_names
        self.output_names = output_names

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Run with inputs in graph-input order (list) or by name (dict), through MNN's Module API.

        The Module API (not createSession) is used because node cases feed shape-defining values (pads, axes,
        target shapes) as graph inputs, which a Session can only see after its first resize.
        """
        import MNN.expr as mnn_expr
        import MNN.nn as mnn_nn

        feeds = dict(inputs) if isinstance(inputs, dict) else dict(zip(self.input_names, inputs, strict=False))
        module = mnn_nn.load_module_from_file(str(self.path), list(feeds), self.output_names)
        values = []
        for x in feeds.values():
            x = np.asarray(x)
            if x.dtype.kind in "iub":
                data, dtype = np.ascontiguousarray(x, np.int32), mnn_expr.int
            else:
                data, dtype = np.ascontiguousarray(x, np.float32), mnn_expr.float
            payload = data.ravel().tolist() if data.ndim == 0 else data
            values.append(mnn_expr.const(payload, list(x.shape), mnn_expr.NCHW, dtype))
        outputs = module.forward(values)
        return tuple(np.array(out.read()) for out in outputs)


class MnnpyRep(MnnRep):
    """A converted model run in mnnpy's own CPU session (values that decide shapes are fed before resizing)."""

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Run with inputs in graph-input order (list) or by name (dict)."""
        from mnnpy.core.session import Session
        from mnnpy.interpreter import Interpreter

        feeds = dict(inputs) if isinstance(inputs, dict) else dict(zip(self.input_names, inputs, strict=False))
        net = Interpreter(str(self.path)).net
        names = [str(n) for n in net.tensorName]
        session = Session(net, {"backend": "CPU", "outputPaths": self.output_names},
                          {names.index(k): tuple(np.shape(v)) for k, v in feeds.items()})
        for name, value in feeds.items():
            session.write(names.index(name), np.asarray(value))
        session.run()
        return tuple(np.array(session.read(names.index(name))) for name in self.output_names)


class MnnBackend(Backend):
    """ONNX backend: mnnpy converter + official MNN runtime (CPU)."""

    rep = MnnRep

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> MnnRep:
        """Convert `model` to a temporary .mnn."""
        from mnnpy.converter.frontends.onnx import load_onnx
        from mnnpy.converter.passes import run_pipeline
        from mnnpy.converter.writer import graph_to_net
        from mnnpy.schema import save_net

        graph = load_onnx(model)
        run_pipeline(graph)
        net = graph_to_net(graph)
        handle, name = tempfile.mkstemp(suffix=".mnn")
        os.close(handle)
        save_net(net, name)
        inits = {init.name for init in model.graph.initializer}
        inputs = [i.name for i in model.graph.input if i.name not in inits]
        return cls.rep(Path(name), inputs, [o.name for o in model.graph.output])

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """CPU only."""
        return device == "CPU"


class MnnpyBackend(MnnBackend):
    """ONNX backend: mnnpy converter + mnnpy's own CPU runtime."""

    rep = MnnpyRep


BACKENDS = {"official": MnnBackend, "mnnpy": MnnpyBackend}


def run_case(case_dir: Path, runtime: str = "official") -> tuple[str, str]:
    """Run one node case: ('pass'|'fail'|'unsupported'|'error', message)."""
    import onnx
    from mnnpy.schema import ModelError
    from onnx import numpy_helper

    model = onnx.load(str(case_dir / "model.onnx"))
    try:
        rep = BACKENDS[runtime].prepare(model)
    except ModelError as exc:
        return "unsupported", " ".join(str(exc).split())[:200]
    except Exception as exc:
        return "error", f"convert: {type(exc).__name__}: {exc}"[:200]
    try:
        for data_dir in sorted(case_dir.glob("test_data_set_*")):
            inputs = []
            for i in range(len(list(data_dir.glob("input_*.pb")))):
                tensor = onnx.TensorProto()
                tensor.ParseFromString((data_dir / f"input_{i}.pb").read_bytes())
                inputs.append(numpy_helper.to_array(tensor))
            expected = []
            for i in range(len(list(data_dir.glob("output_*.pb")))):
                tensor = onnx.TensorProto()
                tensor.ParseFromString((data_dir / f"output_{i}.pb").read_bytes())
                expected.append(numpy_helper.to_array(tensor))
            got = rep.run(inputs)
            for ref, out in zip(expected, got, strict=True):
                ref = np.asarray(ref)
                if ref.dtype.kind not in "fiub":
                    return "fail", f"output dtype {ref.dtype}"
                if list(ref.shape) != list(out.shape):
                    return "fail", f"shape {list(out.shape)} != {list(ref.shape)}"
                if not np.allclose(out.astype(np.float64), ref.astype(np.float64), rtol=RTOL, atol=ATOL,
                                   equal_nan=True):
                    return "fail", "values differ"
    except Exception as exc:
        return "error", f"run: {type(exc).__name__}: {exc}"[:200]
    finally:
        rep.path.unlink(missing_ok=True)
    return "pass", ""


def _worker(runtime: str = "official") -> None:
    for line in sys.stdin:
        name = line.strip()
        if not name:
            continue
        status, message = run_case(node_data_dir() / name, runtime)
        sys.stdout.write(MARK + json.dumps([name, status, message]) + "\n")
        sys.stdout.flush()


def run_suite(names: list[str], runtime: str = "official") -> dict[str, tuple[str, str]]:
    """Run cases in a worker subprocess, restarting it after a native crash (that case counts as 'crash')."""
    results: dict[str, tuple[str, str]] = {}
    pending = list(names)
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    while pending:
        code = f"from tests.converter.onnx_backend import _worker; _worker({runtime!r})"
        proc = subprocess.Popen([sys.executable, "-c", code],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env=env, cwd=str(root))
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("\n".join(pending) + "\n")
        proc.stdin.close()
        for line in proc.stdout:
            if not line.startswith(MARK):
                continue  # MNN prints device info on stdout
            name, status, message = json.loads(line[len(MARK):])
            results[name] = (status, message)
        proc.wait()
        remaining = [name for name in pending if name not in results]
        if remaining:
            results[remaining[0]] = ("crash", f"worker exited with {proc.returncode}")
            remaining = remaining[1:]
        pending = remaining
    return results


def all_cases() -> list[str]:
    """Names of every node case in the installed onnx wheel."""
    return sorted(p.name for p in node_data_dir().iterdir() if (p / "model.onnx").exists())


def read_expected_failures(runtime: str = "official") -> set[str]:
    """Case names listed in the runtime's expected-failure file (comments after '#')."""
    if not EXPECTED_FAILURES[runtime].exists():
        return set()
    names = set()
    for line in EXPECTED_FAILURES[runtime].read_text().splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            names.add(name)
    return names


def main(argv: list[str]) -> int:
    """Run the whole suite; print a summary; with --write-expected rewrite the runtime's expected-failure list."""
    runtime = argv[argv.index("--runtime") + 1] if "--runtime" in argv else "official"
    start = time.perf_counter()
    results = run_suite(all_cases(), runtime)
    passed = sum(1 for status, _ in results.values() if status == "pass")
    print(f"node suite ({runtime} runtime): {passed} / {len(results)} pass in {time.perf_counter() - start:.0f} s")
    if "--write-expected" in argv:
        flag = " --runtime mnnpy" if runtime == "mnnpy" else ""
        engine = "mnnpy's CPU runtime" if runtime == "mnnpy" else "official MNN"
        lines = [f"# ONNX node-suite cases (onnx 1.22.0 wheel) that mnnpy convert + {engine} do not pass yet.",
                 f"# Regenerate: python -m tests.converter.onnx_backend{flag} --write-expected. This list may only "
                 "shrink.",
                 f"# {passed} / {len(results)} cases pass."]
        lines += [f"{name}  # {status}: {msg}" for name, (status, msg) in sorted(results.items()) if status != "pass"]
        EXPECTED_FAILURES[runtime].write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
