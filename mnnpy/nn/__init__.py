"""`mnnpy.nn`: MNN's module API (MNN 3.6.1 `MNN.nn`): load a `.mnn` as a Module and run it on Vars.

`load_module_from_file` runs the model through an Interpreter session of the core (backend and threads from the
arguments or a RuntimeManager); `Module` is the base class of user modules (children and parameters registered by
attribute assignment).
"""

from __future__ import annotations

from mnnpy.nn import compress, loss
from mnnpy.nn.layers import batch_norm, conv, dropout, linear
from mnnpy.nn.module import (
           EmptyModule,
           Module,
           RuntimeManager,
           create_runtime_manager,
           load_module,
           load_module_from_file,
)

dummy = None

__all__ = ["EmptyModule", "Module", "RuntimeManager", "batch_norm", "compress", "conv", "create_runtime_manager",
           "dropout", "dummy", "linear", "load_module", "load_module_from_file", "loss"]
