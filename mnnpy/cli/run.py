"""Run a .mnn model on random or given inputs; print output shapes, a value summary and the time.

Like MNN's `MNNV2Basic.out` / `ModuleBasic.out`: `mnnpy run m.mnn --input x=x.npy --backend cpu --repeat 10`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

COMMAND = "run"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="path to a .mnn file")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="input values from a .npy file (repeatable); other inputs get random values")
    p.add_argument("--backend", default="cpu", help="cpu | opencl | vulkan | auto (default cpu)")
    p.add_argument("--threads", type=int, default=1, help="numThread")
    p.add_argument("--repeat", type=int, default=1, help="timed runs after one warm-up")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--info", action="store_true", help="print the per-command plan (backend, algorithm)")


def run(args: argparse.Namespace) -> int:
    from mnnpy.interpreter import Interpreter
    from mnnpy.schema.errors import ModelError

    given = {}
    for item in args.input:
        name, sep, path = item.partition("=")
        if not sep:
            raise ModelError(f"--input expects NAME=FILE.npy, got {item!r}")
        given[name] = np.load(path)
    interp = Interpreter(args.model)
    t0 = time.perf_counter()
    session = interp.create_session({"backend": args.backend.upper(), "numThread": args.threads})
    for name, value in given.items():
        tensor = interp.get_session_input(session, name)
        if tuple(tensor.getShape()) != value.shape:
            interp.resize_tensor(tensor, value.shape)
            interp.resize_session(session)
    t_prep = time.perf_counter() - t0
    rng = np.random.default_rng(args.seed)
    for name, tensor in interp.get_session_input_all(session).items():
        if name in given:
            tensor.copyFrom(given[name].astype(tensor.getDataType().dtype))
        else:
            dtype = tensor.getDataType().dtype
            value = rng.standard_normal(tensor.getShape()) if dtype.kind == "f" else np.zeros(tensor.getShape())
            tensor.copyFrom(value.astype(dtype))
    interp.run_session(session)
    t0 = time.perf_counter()
    for _ in range(max(args.repeat, 1)):
        interp.run_session(session)
    t_run = (time.perf_counter() - t0) / max(args.repeat, 1)
    for name, tensor in interp.get_session_output_all(session).items():
        v = tensor.getNumpyData()
        summary = f"min {v.min():.6g} max {v.max():.6g} mean {v.mean():.6g}" if v.size else "empty"
        print(f"output {name}: shape {tuple(v.shape)} {v.dtype}  {summary}")
    info = session.info()
    mem = info["memory"]
    print(f"backend {info['backend']}: pre-inference {t_prep * 1e3:.1f} ms, run {t_run * 1e3:.2f} ms "
          f"(mean of {max(args.repeat, 1)}), arena {mem.get('arena_bytes', 0)} B for "
          f"{mem.get('tensor_bytes', 0)} B of tensors")
    if args.info:
        for cmd in info["commands"]:
            outs = " ".join(cmd.get("outputs", []))
            print(f"  {cmd['type']:<22} {cmd['name'][:36]:<36} {cmd.get('backend', ''):<6} "
                  f"{cmd.get('algorithm', ''):<16} {outs}")
    return 0
