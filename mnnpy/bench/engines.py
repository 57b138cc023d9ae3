"""One adapter per engine: load the model, create a session (both timed), feed fixed inputs, run, read the output.

* ``MnnpyEngine``: ``mnnpy.Interpreter`` on a .mnn (our converter's, when the source is ONNX).
* ``OrtEngine``: onnxruntime on the .onnx, ``intra_op_num_threads`` = threads, spinning off (interleaved runs).
* ``MnnEngine``: the official MNN wheel on a .mnn. Engine ``mnn`` runs the same file as mnnpy (our .mnn is MNN's
  format): one graph, two runtimes. Engine ``mnn-cvt`` runs MNN's own converter's file (its graph optimisations
  included: MNN as a product). One of several conversions of tools/bench_models.py's ResNet-18 by MNN 3.6.1's
  converter gave a file whose outputs were all zeros; the agreement column shows such cases.

``prepare_models`` does the conversions; a peer that is not installed, or cannot convert or run the model, becomes
a ``Missing`` entry with the reason, never an exception.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ENGINES = ("mnnpy", "ort", "mnn", "mnn-cvt")


@dataclass
class Missing:
    """An engine that could not take part, and why."""

    name: str
    reason: str


@dataclass
class Models:
    """The files each engine runs (None where there is none) and the conversion times."""

    onnx: Path | None
    mnnpy: Path | None
    official: Path | None
    convert_s: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def _official_convert(src: Path, dst: Path) -> None:
    """The official converter through its Python entry (never the console script), its chatter silenced."""
    import _tools

    args = ["mnnconvert", "-f", "ONNX", "--modelFile", str(src), "--MNNModel", str(dst), "--bizCode", "MNN"]
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(io.StringIO()):
        saved = os.dup(1)
        os.dup2(devnull.fileno(), 1)
        try:
            _tools.mnnconvert(args)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
    if not dst.exists():
        raise RuntimeError("the official converter wrote nothing")


def prepare_models(model: Path, workdir: Path | None, wanted: set[str]) -> Models:
    """Convert ``model`` (.onnx or .mnn) for the wanted engines.

    Args:
        model: the source model.
        workdir: where converted files go (None: a fresh temporary folder).
        wanted: engine names among ``ENGINES``.

    Returns:
        The files per engine; conversion failures are recorded in ``errors``, not raised.
    """
    model = Path(model)
    out = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="mnnpy-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    if model.suffix.lower() != ".onnx":
        return Models(None, model, model, errors={"ort": "the model is a .mnn file (onnxruntime needs the .onnx)",
                                                  "mnn-cvt": "the model is a .mnn file (nothing to convert)"})
    models = Models(model, None, None)
    t0 = time.perf_counter()
    try:
        from mnnpy.converter import convert

        models.mnnpy = out / f"{model.stem}.mnnpy.mnn"
        convert(model, models.mnnpy)
        models.convert_s["mnnpy"] = time.perf_counter() - t0
    except Exception as exc:
        models.mnnpy = None
        models.errors["mnnpy"] = f"conversion failed: {type(exc).__name__}: {exc}"
    if "mnn-cvt" in wanted:
        t0 = time.perf_counter()
        try:
            dst = out / f"{model.stem}.official.mnn"
            _official_convert(model, dst)
            models.official = dst
            models.convert_s["mnn-cvt"] = time.perf_counter() - t0
        except ImportError:
            models.errors["mnn-cvt"] = "the official MNN wheel is not installed (pip install mnn)"
        except Exception as exc:
            models.errors["mnn-cvt"] = f"official conversion failed: {type(exc).__name__}: {exc}"
    return models


def random_inputs(shapes: dict[str, tuple[tuple[int, ...], np.dtype]], seed: int = 0) -> dict[str, np.ndarray]:
    """Fixed random inputs (standard normal for floats, zeros for integers) by name."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, (shape, dtype) in shapes.items():
        if np.dtype(dtype).kind == "f":
            feeds[name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[name] = np.zeros(shape, dtype=dtype)
    return feeds


class Engine:
    """Common interface: ``load_ms``, ``session_ms``, ``run()``, ``output()``; subclasses fill them in."""

    name = "?"
    load_ms = 0.0
    session_ms = 0.0

    def input_shapes(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """Input names -> (shape, dtype)."""
        raise NotImplementedError

    def feed(self, feeds: dict[str, np.ndarray]) -> None:
        """Copy the inputs in (before the timed runs)."""
        raise NotImplementedError

    def reset(self) -> None:
        """Untimed work before each timed run (official MNN may reuse its input buffer as scratch: refill it)."""

    def run(self) -> None:
        """One inference."""
        raise NotImplementedError

    def output(self) -> np.ndarray:
        """The first output as a float32 NCHW array."""
        raise NotImplementedError


class MnnpyEngine(Engine):
    """mnnpy's Interpreter/Session on a .mnn file."""

    name = "mnnpy"

    def __init__(self, path: Path, threads: int, backend: str = "CPU", config: dict[str, Any] | None = None) -> None:
        from mnnpy.core import registry
        from mnnpy.interpreter import Interpreter

        # one-time Python imports are not pre-inference (the peers' imports are not timed either)
        registry.load_core()
        if backend.lower() in ("cpu", "auto"):
            registry.import_all("mnnpy.backends.cpu.ops")
            import mnnpy.backends.cpu.backend  # the first createSession imports it
            import mnnpy.backends.cpu.compute.conv  # conv kernels import it on first resize
            from mnnpy.backends.cpu.compute import blas

            blas.backend()  # threadpoolctl's import and its one scan of the loaded libraries
        import mnnpy.nn._segments  # noqa: F401 - a net split into segments needs it (`_runner`)
        t0 = time.perf_counter()
        self.interp = Interpreter(str(path))
        t1 = time.perf_counter()
        config = {"backend": backend.upper(), "numThread": threads, **(config or {})}
        self.session = self.interp.createSession(config)
        self.runner = self._runner(config)
        t2 = time.perf_counter()
        self.load_ms, self.session_ms = (t1 - t0) * 1e3, (t2 - t1) * 1e3
        self._feeds: dict[int, np.ndarray] = {}
        self._last: dict[int, np.ndarray] = {}

    def _runner(self, config: dict[str, Any]) -> Any:
        """A Module's runner (`mnnpy.nn._segments`) when the net's shapes depend on values it computes: a session
        would fold the whole net with the first input's values and time nothing. None for every other net."""
        from mnnpy.nn._segments import Runner, needs_split

        net = self.interp.net
        inputs = list(self.session._input_placeholders())
        if not needs_split(self.session, set(inputs)):
            return None
        names = [str(n) for n in net.tensorName or []]
        runner = Runner(net, inputs, [names.index(str(n)) for n in net.outputName or []], config)
        runner.needs_split = True  # the session above found it: split on the first (untimed) run, no second plan
        return runner

    @property
    def mode(self) -> str:
        """How the runs go: through one session, or a Module's segments (split on the first, untimed run)."""
        return "segments" if self.runner is not None else "session"

    def input_shapes(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        tensors = self.interp.getSessionInputAll(self.session)
        return {n: (tuple(t.getShape()), np.dtype(t.getDataType().dtype)) for n, t in tensors.items()}

    def feed(self, feeds: dict[str, np.ndarray]) -> None:
        if self.runner is not None:
            names = [str(n) for n in self.interp.net.tensorName or []]
            self._feeds = {names.index(k): np.asarray(v) for k, v in feeds.items()}
            return
        for name, value in feeds.items():
            self.interp.getSessionInput(self.session, name).copyFrom(value)

    def run(self) -> None:
        if self.runner is not None:
            self._last = self.runner.run(self._feeds)
            return
        self.interp.runSession(self.session)

    def output(self) -> np.ndarray:
        if self.runner is not None:
            return np.asarray(self._last[self.runner.outputs[0]], dtype=np.float32)
        return np.asarray(self.interp.getSessionOutput(self.session).getNumpyData(), dtype=np.float32)


class OrtEngine(Engine):
    """onnxruntime's CPU provider on the .onnx file."""

    name = "ort"

    def __init__(self, path: Path, threads: int) -> None:
        import onnxruntime as ort

        t0 = time.perf_counter()
        data = Path(path).read_bytes()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no spinning into the next engine
        opts.log_severity_level = 3
        t1 = time.perf_counter()
        self.sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        t2 = time.perf_counter()
        self.load_ms, self.session_ms = (t1 - t0) * 1e3, (t2 - t1) * 1e3
        self.feeds: dict[str, np.ndarray] = {}
        self.result: list[np.ndarray] = []

    def input_shapes(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        kinds = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32}
        shapes = {}
        for i in self.sess.get_inputs():
            shape = tuple(d if isinstance(d, int) else 1 for d in i.shape)
            shapes[i.name] = (shape, np.dtype(kinds.get(i.type, np.float32)))
        return shapes

    def feed(self, feeds: dict[str, np.ndarray]) -> None:
        self.feeds = dict(feeds)

    def run(self) -> None:
        self.result = self.sess.run(None, self.feeds)

    def output(self) -> np.ndarray:
        if not self.result:
            self.run()
        return np.asarray(self.result[0], dtype=np.float32)


class MnnEngine(Engine):
    """The official MNN wheel on a .mnn file."""

    hosts: list[tuple[Any, Any, np.ndarray]]

    def __init__(self, path: Path, threads: int, name: str = "mnn") -> None:
        self.name = name
        # MNN's wheel runs on OpenMP: idle workers that spin after a run would eat the next engine's time slice
        # in interleaved runs (onnxruntime's spinning is switched off the same way). Read when libgomp loads.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import MNN

        self.mnn = MNN
        self.module: Any = None
        t0 = time.perf_counter()
        self.interp = MNN.Interpreter(str(path))
        t1 = time.perf_counter()
        try:
            self.session = self.interp.createSession({"numThread": threads})
        except Exception:  # its Session API refuses a net whose shapes need computed values
            self.session = None
            self.module, self.declared = self._module(path, threads)
        t2 = time.perf_counter()
        self.load_ms, self.session_ms = (t1 - t0) * 1e3, (t2 - t1) * 1e3

    def _module(self, path: Path, threads: int) -> tuple[Any, dict[str, tuple[int, ...]]]:
        """Official MNN's Module API on the file, as its Session API's refusal advises ("use module api instead")."""
        from mnnpy.schema import load_net
        from mnnpy.schema import mnn_generated as fb

        net = load_net(path)
        names = [str(n) for n in net.tensorName or []]
        declared = {names[int(op.outputIndexes[0])]: tuple(int(d) for d in np.asarray(op.main.dims).ravel())
                    for op in net.oplists or [] if op.type == fb.OpType.Input and op.main is not None}
        outputs = [str(n) for n in net.outputName or []]
        return self.mnn.nn.load_module_from_file(str(path), list(declared), outputs, thread_num=threads), declared

    def input_shapes(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        if self.module is not None:
            return {n: (shape, np.dtype(np.float32)) for n, shape in self.declared.items()}
        tensors = self.interp.getSessionInputAll(self.session)
        return {n: (tuple(t.getShape()), np.dtype(np.float32)) for n, t in tensors.items()}

    def feed(self, feeds: dict[str, np.ndarray]) -> None:
        mnn = self.mnn
        if self.module is not None:
            self.args = [mnn.expr.const(np.ascontiguousarray(feeds[n], np.float32), list(feeds[n].shape), mnn.expr.NCHW)
                         for n in self.declared]
            self.hosts = []
            return
        self.hosts = []
        for name, value in feeds.items():
            tensor = self.interp.getSessionInput(self.session, name)
            data = np.ascontiguousarray(value, np.float32)
            host = mnn.Tensor(value.shape, mnn.Halide_Type_Float, data, mnn.Tensor_DimensionType_Caffe)
            self.hosts.append((tensor, host, data))
        self.reset()

    def reset(self) -> None:
        for tensor, host, _ in self.hosts:
            tensor.copyFrom(host)

    def run(self) -> None:
        if self.module is not None:
            self.result = self.module.forward(self.args)
            return
        self.interp.runSession(self.session)

    def output(self) -> np.ndarray:
        mnn = self.mnn
        if self.module is not None:
            out = self.result[0] if isinstance(self.result, (list, tuple)) else self.result
            return np.array(out.read(), np.float32)
        tensor = self.interp.getSessionOutput(self.session)
        shape = list(tensor.getShape())
        host = mnn.Tensor(shape, mnn.Halide_Type_Float, np.zeros(shape, np.float32), mnn.Tensor_DimensionType_Caffe)
        tensor.copyToHostTensor(host)
        return np.array(host.getData(), np.float32).reshape(shape)


def open_engines(models: Models, names: list[str], threads: int, backend: str = "CPU",
                 config: dict[str, Any] | None = None) -> tuple[list[Engine], list[Missing]]:
    """Create the engines in ``names`` order; the ones that cannot run become ``Missing`` entries."""
    engines: list[Engine] = []
    missing: list[Missing] = []
    for name in names:
        if name in models.errors:
            missing.append(Missing(name, models.errors[name]))
            continue
        try:
            path = {"mnnpy": models.mnnpy, "ort": models.onnx, "mnn": models.mnnpy, "mnn-cvt": models.official}
            if name not in path:
                missing.append(Missing(name, f"unknown engine (known: {', '.join(ENGINES)})"))
                continue
            source = path[name]
            if source is None:
                why = "it runs mnnpy's .mnn, which does not exist" if name == "mnn" else "no model file for it"
                missing.append(Missing(name, why))
            elif name == "mnnpy":
                engines.append(MnnpyEngine(source, threads, backend, config))
            elif name == "ort":
                engines.append(OrtEngine(source, threads))
            else:
                engines.append(MnnEngine(source, threads, name))
        except ImportError as exc:
            missing.append(Missing(name, f"not installed ({exc.name or exc})"))
        except Exception as exc:
            if name == "mnnpy":
                raise
            missing.append(Missing(name, f"{type(exc).__name__}: {exc}"))
    return engines, missing
