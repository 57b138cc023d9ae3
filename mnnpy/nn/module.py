"""Module base class, RuntimeManager and the session-backed module of `load_module_from_file` (MNN: `MNN.nn`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from mnnpy.expr.enums import Backend, MemoryMode, PowerMode, PrecisionMode
from mnnpy.expr.var import Var, const_of, to_var


class Module:
    """Base class of modules: `forward` calls `onForward`; Modules and Vars set as attributes are registered.

    MNN: `MNN.nn.Module` (a subclass of `_nn._Module`).
    """

    _children: dict[str, Module]
    _params: dict[str, Var]

    def __init__(self) -> None:
        object.__setattr__(self, "_children", {})
        object.__setattr__(self, "_params", {})
        object.__setattr__(self, "_training", False)
        object.__setattr__(self, "_name", type(self).__name__)

    def __setattr__(self, key: str, value: Any) -> None:
        if "_children" not in self.__dict__:
            Module.__init__(self)
        if isinstance(value, Module):
            self._children[key] = value
        elif isinstance(value, Var):
            self._params[key] = value
        object.__setattr__(self, key, value)

    def forward(self, *args: Any) -> Any:
        """Run the module (MNN: `Module.forward`)."""
        return self.onForward(*args)

    def onForward(self, *args: Any) -> Any:
        """Override in subclasses (MNN: `Module.onForward`)."""
        raise NotImplementedError(f"{type(self).__name__} does not define onForward")

    def __call__(self, *args: Any) -> Any:
        return self.forward(*args)

    @property
    def parameters(self) -> list[Var]:
        """Vars of this module and its children (MNN: `Module.parameters`)."""
        if "_params" not in self.__dict__:
            Module.__init__(self)
        out = list(self._params.values())
        for child in self._children.values():
            out += child.parameters
        return out

    def load_parameters(self, params: Sequence[Var]) -> bool:
        """Write values into the parameters, in `parameters` order (MNN: `Module.load_parameters`)."""
        mine = self.parameters
        if len(mine) != len(params):
            return False
        for dst, src in zip(mine, params, strict=True):
            dst.write(to_var(src).read())
        return True

    def train(self, is_training: bool = True) -> None:
        """Set the training flag (no training in mnnpy) (MNN: `Module.train`)."""
        object.__setattr__(self, "_training", bool(is_training))
        for child in self._children.values():
            child.train(is_training)

    @property
    def is_training(self) -> bool:
        """Training flag (MNN: `Module.is_training`)."""
        return bool(self.__dict__.get("_training", False))

    @property
    def name(self) -> str:
        """Module name (MNN: `Module.name`)."""
        return str(self.__dict__.get("_name", type(self).__name__))

    def set_name(self, name: str) -> None:
        """Rename (MNN: `Module.set_name`)."""
        object.__setattr__(self, "_name", str(name))

    def clear_cache(self) -> None:
        """Drop cached state (MNN: `Module.clear_cache`)."""

    def get_info(self) -> dict[str, Any]:
        """Description of the module (MNN: `Module.get_info`)."""
        return {"name": self.name, "children": list(self.__dict__.get("_children", {}))}

    def clone(self, shareParams: bool = True) -> Module:  # noqa: N803 - MNN's name
        """A shallow copy (MNN: `Module.clone`)."""
        import copy

        return copy.copy(self)


class EmptyModule(Module):
    """A module that returns its input (MNN: `nn.EmptyModule`)."""

    def onForward(self, *args: Any) -> Any:
        """Identity."""
        return args[0] if len(args) == 1 else list(args)


_BACKEND_NAMES = {Backend.CPU: "CPU", Backend.OPENCL: "OPENCL", Backend.VULKAN: "VULKAN"}
_PRECISION = {PrecisionMode.Normal: "normal", PrecisionMode.High: "high", PrecisionMode.Low: "low",
              PrecisionMode.Low_BF16: "Low_BF16"}


class RuntimeManager:
    """A schedule config shared by modules (MNN: `nn.RuntimeManager`)."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self.config = dict(config or {})
        self.cache_file: str | None = None
        self.hints: dict[int, int] = {}
        self.mode = 0

    def set_cache(self, path: str) -> None:
        """Cache file for tuned kernels (MNN: `RuntimeManager.set_cache`)."""
        self.cache_file = str(path)
        self.config["cacheFile"] = self.cache_file

    def set_external(self, path: str) -> None:
        """External weight file (not used by mnnpy) (MNN: `RuntimeManager.set_external`)."""
        self.config["external"] = str(path)

    def set_hint(self, hint: int, value: int) -> None:
        """Runtime hint (MNN: `RuntimeManager.set_hint`)."""
        self.hints[int(hint)] = int(value)

    def set_mode(self, mode: int) -> None:
        """Session mode (MNN: `RuntimeManager.set_mode`)."""
        self.mode = int(mode)

    def update_cache(self) -> None:
        """Write the cache file (MNN: `RuntimeManager.update_cache`)."""


def create_runtime_manager(config: Any) -> RuntimeManager:
    """A RuntimeManager from a config dict or a tuple of dicts (the first is used) (MNN: same name)."""
    if isinstance(config, (tuple, list)):
        config = config[0] if config else {}
    return RuntimeManager(dict(config))


class SessionModule(Module):
    """A `.mnn` model run through pre-inferred sessions (MNN: the module of `load_module_from_file`).

    One session while every shape follows from the input shapes; a net with an op whose output shape depends on
    values the net computes (Where with one input: ONNX NonZero) is split there into segments, as MNN's Module API
    does (`mnnpy.nn._segments`).
    """

    interpreter: Any
    runner: Any
    input_names: list[str]
    output_names: list[str]

    def __init__(self, path: str, input_names: Sequence[str], output_names: Sequence[str],
                 config: dict[str, Any]) -> None:
        super().__init__()
        from mnnpy.interpreter import Interpreter
        from mnnpy.nn._segments import Runner

        object.__setattr__(self, "interpreter", Interpreter(path))
        names = [str(n) for n in (self.interpreter.net.tensorName or [])]
        outs = [str(n) for n in output_names] or [str(n) for n in (self.interpreter.net.outputName or [])]
        missing = [n for n in [*input_names, *outs] if n not in names]
        if missing:
            raise ValueError(f"load_module_from_file: {path} has no tensors named {missing}")
        runner = Runner(self.interpreter.net, [names.index(str(n)) for n in input_names],
                        [names.index(n) for n in outs], dict(config))
        runner.prepare()  # plans now (declared input shapes): a model that cannot load fails here, not at forward
        object.__setattr__(self, "runner", runner)
        object.__setattr__(self, "input_names", [str(n) for n in input_names])
        object.__setattr__(self, "output_names", outs)
        self.set_name(os.path.basename(path))

    @property
    def session(self) -> Any:
        """The session of an unsplit net (None once the net runs as segments)."""
        return self.runner.session

    def _in_format(self, var: Var, name: str) -> Var:
        """`var` in the layout the model declares for input `name` (MNN's Module converts NCHW <-> NHWC Vars)."""
        from mnnpy.schema import mnn_generated as fb

        net = self.interpreter.net
        want = next((op.main.dformat for op in net.oplists or [] if op.type == fb.OpType.Input and op.main is not None
                     and str(net.tensorName[int(op.outputIndexes[0])]) == name), None)
        have = {"NCHW": 0, "NHWC": 1}.get(var.data_format.name)
        if want in (0, 1) and have is not None and want != have and var.ndim == 4:
            from mnnpy.expr.enums import data_format
            from mnnpy.expr.math import convert

            return convert(var, data_format(want))
        return var

    def onForward(self, *args: Any) -> Any:
        """Run the segments on the inputs (planning again when shapes change); return the outputs as Vars."""
        single = len(args) == 1 and not isinstance(args[0], (list, tuple))
        inputs = [args[0]] if single else list(args[0] if len(args) == 1 else args)
        if len(inputs) != len(self.input_names):
            raise ValueError(f"forward() got {len(inputs)} inputs, the module takes {self.input_names}")
        runner = self.runner
        values = [np.asarray(self._in_format(to_var(v), n).read())
                  for v, n in zip(inputs, self.input_names, strict=True)]
        result = runner.run(dict(zip(runner.inputs, values, strict=True)))
        outs = [const_of(result[i], runner.formats.get(i, "NCHW"))  # TF models' outputs are NHWC, as in MNN
                for i in runner.outputs]
        return outs[0] if single and len(outs) == 1 else outs


def load_module_from_file(file_name: str | os.PathLike, input_names: Sequence[str], output_names: Sequence[str],
                          runtime_manager: RuntimeManager | None = None, dynamic: bool = False,
                          shape_mutable: bool = True, rearrange: bool = False, backend: Backend = Backend.CPU,
                          memory_mode: MemoryMode = MemoryMode.Normal, power_mode: PowerMode = PowerMode.Normal,
                          precision_mode: PrecisionMode = PrecisionMode.Normal, thread_num: int = 1) -> Module:
    """Load a `.mnn` model as a Module whose `forward` runs it in a session (MNN: `nn.load_module_from_file`)."""
    if runtime_manager is not None:
        config = dict(runtime_manager.config)
    else:
        config = {"backend": _BACKEND_NAMES.get(backend, "CPU"), "numThread": int(thread_num),
                  "precision": _PRECISION.get(precision_mode, "normal")}
    return SessionModule(os.fspath(file_name), input_names, output_names, config)


def load_module(inputs: Sequence[Var], outputs: Sequence[Var], for_training: bool = False) -> Module:
    """A Module computing `outputs` from placeholder `inputs` of an expression graph (MNN: `nn.load_module`)."""
    return _GraphModule(list(inputs), list(outputs))


class _GraphModule(Module):
    graph_inputs: list[Var]
    graph_outputs: list[Var]

    def __init__(self, inputs: list[Var], outputs: list[Var]) -> None:
        super().__init__()
        object.__setattr__(self, "graph_inputs", inputs)
        object.__setattr__(self, "graph_outputs", outputs)

    def onForward(self, *args: Any) -> Any:
        values = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
        for ph, v in zip(self.graph_inputs, values, strict=True):
            ph.write(to_var(v).read())
        return [const_of(np.array(o.read())) for o in self.graph_outputs]
