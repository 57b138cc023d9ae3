"""MNN's `Interpreter` (MNN 3.6.1 Python API): snake_case methods over the core Session, and the camelCase
compatibility facade as one-line delegations, so `import mnnpy as MNN` runs MNN scripts unchanged.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

from mnnpy.core.idst import is_quantized
from mnnpy.core.pipeline import RASTER, op_type_name
from mnnpy.core.session import Session
from mnnpy.schema import load_net
from mnnpy.schema.errors import ModelError
from mnnpy.tensor import Tensor, as_shape, session_tensor

SessionInfoCode = {"MEMORY": 0, "FLOPS": 1, "BACKENDS": 2, "RESIZE_STATUS": 3, "THREAD_NUMBER": 4}


class OpInfo:
    """What `runSessionWithCallBackInfo` callbacks receive (MNN: `MNN.OpInfo`)."""

    def __init__(self, name: str, op_type: str, flops: float) -> None:
        self._name, self._type, self._flops = name, op_type, flops

    def getName(self) -> str:
        """Op name."""
        return self._name

    def getType(self) -> str:
        """Op type name."""
        return self._type

    def getFlops(self) -> float:
        """Estimated MFLOPs."""
        return self._flops


def _flops(cmd: Any, session: Session) -> float:
    """Rough MFLOPs of a command (MNN counts multiply-adds of conv/matmul, else output elements)."""
    if not cmd.outputs:
        return 0.0
    out = session.graph.descs[cmd.outputs[0]]
    n = float(out.size)
    op = cmd.op
    if cmd.op_type in (12, 13, 17, 18) and op is not None and op.main is not None:
        c = op.main.common
        n *= (c.inputCount or 1) // max(c.group, 1) * c.kernelX * c.kernelY
    elif cmd.op_type in (39, 106) and cmd.inputs:
        n *= session.graph.descs[cmd.inputs[0]].shape[-1]
    return n / 1e6


class Interpreter:
    """MNN.Interpreter(path): owns a model and creates Sessions (MNN: `Interpreter`)."""

    def __init__(self, model: str | bytes) -> None:
        self.net = load_net(model)
        if is_quantized(self.net):  # feature scales in the file: int8 islands, as MNN's runtime decides from quantInfo
            from mnnpy.quant.lower import lower_int8

            self.net = lower_int8(self.net)
        self.path = model if isinstance(model, str) else "<bytes>"
        self.sessions: list[Session] = []
        self.cache_file: str | None = None
        self.session_mode: int = 0
        self.hints: dict[int, int] = {}
        self._lock = threading.Lock()

    # *** snake_case core ***
    def create_session(self, config: dict[str, Any] | None = None, runtime: Any = None) -> Session:
        """Pre-inference for the model's input shapes; returns a Session (MNN: `Interpreter::createSession`)."""
        if self.net is None:
            raise ModelError("the model was released (releaseModel) before createSession")
        config = dict(config or {})
        if self.cache_file is not None:
            config.setdefault("cacheFile", self.cache_file)
        session = Session(self.net, config)
        with self._lock:
            self.sessions.append(session)
        return session

    def release_session(self, session: Session) -> bool:
        """Free a session's executions and arena now (MNN: `Interpreter::releaseSession`)."""
        session.release()
        with self._lock:
            if session in self.sessions:
                self.sessions.remove(session)
        return True

    def resize_tensor(self, tensor: Tensor, shape: Sequence[int]) -> None:
        """Set a new shape on an input tensor; takes effect at `resizeSession`."""
        if tensor._session is None:
            raise ModelError("resizeTensor needs a session input tensor")
        tensor._session.input_shapes[tensor._index] = as_shape(shape)

    def resize_session(self, session: Session) -> bool:
        """Redo pre-inference for the new input shapes (MNN: `Interpreter::resizeSession`)."""
        session.resize()
        return True

    def run_session(self, session: Session) -> int:
        """Run; 0 (NO_ERROR) on success (MNN: `Interpreter::runSession`)."""
        session.run()
        return 0

    def run_session_with_callback(self, session: Session, begin: Callable | None, end: Callable | None,
                                  with_info: bool = False) -> int:
        """Run with per-op callbacks `begin(tensors, name|OpInfo) -> bool`, `end(...) -> bool`."""

        def arg(cmd: Any) -> Any:
            kind = "Raster" if cmd.op_type == RASTER else op_type_name(cmd.op_type)
            return OpInfo(cmd.name, kind, _flops(cmd, session)) if with_info else cmd.name

        def before(cmd: Any) -> bool:
            return begin is None or begin([session_tensor(session, i) for i in cmd.inputs], arg(cmd)) is not False

        def after(cmd: Any) -> bool:
            return end is None or end([session_tensor(session, i) for i in cmd.outputs], arg(cmd)) is not False

        session.run(before, after)
        return 0

    def get_session_input(self, session: Session, name: str | None = None) -> Tensor:
        """An input tensor by name (None: the first) (MNN: `getSessionInput`)."""
        return session_tensor(session, session.input_index(name))

    def get_session_output(self, session: Session, name: str | None = None) -> Tensor:
        """An output tensor by name (None: the first) (MNN: `getSessionOutput`)."""
        return session_tensor(session, session.output_index(name))

    def get_session_input_all(self, session: Session) -> dict[str, Tensor]:
        """All inputs by name."""
        return {n: self.get_session_input(session, n) for n in session.input_names()}

    def get_session_output_all(self, session: Session) -> dict[str, Tensor]:
        """All outputs by name."""
        return {n: self.get_session_output(session, n) for n in session.output_names()}

    def get_session_info(self, session: Session, code: int) -> Any:
        """MEMORY (MB), FLOPS (M), BACKENDS, RESIZE_STATUS, THREAD_NUMBER (MNN: `getSessionInfo`)."""
        if code == 0:
            mem = session.main.memory_info()
            return (mem.get("arena_bytes", 0) + mem.get("static_bytes", 0)) / 2**20
        if code == 1:
            return float(math.fsum(_flops(c, session) for c in session.commands))
        if code == 2:
            return [0 if session.main.name == "cpu" else {"opencl": 3, "vulkan": 7}.get(session.main.name, 0)]
        if code == 3:  # 0 ready, 2 needs resize (MNN: RESIZE_STATUS)
            return 2 if session.resize_error is not None else 0
        if code == 4:
            return int(session.config.get("numThread", 1) or 1)
        raise ModelError(f"unknown session info code {code}")

    def release_model(self) -> None:
        """Drop the model; existing sessions keep what they need (MNN: `releaseModel`)."""
        self.net = None

    # *** camelCase facade (MNN 3.6.1 names) ***
    def createSession(self, config: dict[str, Any] | None = None, runtime: Any = None) -> Session:
        """MNN: Interpreter.createSession."""
        return self.create_session(config, runtime)

    def createRuntime(self, config: dict[str, Any] | None = None) -> tuple:
        """MNN: Interpreter.createRuntime (runtimes are shared per backend here)."""
        return (dict(config or {}),)

    def releaseSession(self, session: Session) -> bool:
        """MNN C++: Interpreter::releaseSession."""
        return self.release_session(session)

    def resizeSession(self, session: Session) -> bool:
        """MNN: Interpreter.resizeSession."""
        return self.resize_session(session)

    def resizeTensor(self, tensor: Tensor, shape: Sequence[int]) -> None:
        """MNN: Interpreter.resizeTensor."""
        self.resize_tensor(tensor, shape)

    def runSession(self, session: Session) -> int:
        """MNN: Interpreter.runSession."""
        return self.run_session(session)

    def runSessionWithCallBack(self, session: Session, begin: Callable | None = None,
                               end: Callable | None = None) -> int:
        """MNN: Interpreter.runSessionWithCallBack."""
        return self.run_session_with_callback(session, begin, end)

    def runSessionWithCallBackInfo(self, session: Session, begin: Callable | None = None,
                                   end: Callable | None = None) -> int:
        """MNN: Interpreter.runSessionWithCallBackInfo."""
        return self.run_session_with_callback(session, begin, end, with_info=True)

    def getSessionInput(self, session: Session, name: str | None = None) -> Tensor:
        """MNN: Interpreter.getSessionInput."""
        return self.get_session_input(session, name)

    def getSessionOutput(self, session: Session, name: str | None = None) -> Tensor:
        """MNN: Interpreter.getSessionOutput."""
        return self.get_session_output(session, name)

    def getSessionInputAll(self, session: Session) -> dict[str, Tensor]:
        """MNN: Interpreter.getSessionInputAll."""
        return self.get_session_input_all(session)

    def getSessionOutputAll(self, session: Session) -> dict[str, Tensor]:
        """MNN: Interpreter.getSessionOutputAll."""
        return self.get_session_output_all(session)

    def getSessionInfo(self, session: Session, code: int) -> Any:
        """MNN: Interpreter.getSessionInfo."""
        return self.get_session_info(session, code)

    def getModelVersion(self) -> str:
        """MNN: Interpreter.getModelVersion."""
        info = getattr(self.net, "extraInfo", None)
        return str(info.version) if info is not None and info.version else "version info not found"

    def setSessionMode(self, mode: int) -> None:
        """MNN: Interpreter.setSessionMode (recorded; sessions here always resize directly)."""
        self.session_mode = int(mode)

    def setSessionHint(self, hint: int, value: int) -> None:
        """MNN: Interpreter.setSessionHint (recorded)."""
        self.hints[int(hint)] = int(value)

    def setCacheFile(self, path: str, key_size: int = 128) -> None:
        """MNN: Interpreter.setCacheFile (GPU backends read/write tuning caches there)."""
        self.cache_file = path

    def updateCacheFile(self, session: Session, flag: int = 0) -> int:
        """MNN: Interpreter.updateCacheFile: a GPU backend writes its program binaries and tuning to the cache file."""
        update = getattr(session.main, "update_cache", None)
        return 0 if update is None or self.cache_file is None else int(not update(self.cache_file))

    def setExternalFile(self, path: str, flag: int = 128) -> None:
        """MNN: Interpreter.setExternalFile (external weights are not supported yet)."""
        self.external_file = path

    def cache(self) -> None:
        """MNN: Interpreter.cache (no-op)."""

    def removeCache(self) -> None:
        """MNN: Interpreter.removeCache (no-op)."""

    def updateSessionToModel(self, session: Session) -> int:
        """MNN: Interpreter.updateSessionToModel (training is not supported: no-op)."""
        return 0

    def releaseModel(self) -> None:
        """MNN: Interpreter.releaseModel."""
        self.release_model()
