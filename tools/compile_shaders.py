"""Compile the Vulkan backend's GLSL compute shaders to SPIR-V (MNN: `makeshader.py`).

Every `backends/vulkan/shaders/*.comp` is compiled with `glslangValidator -V --target-env vulkan1.1`, validated
with `spirv-val --target-env vulkan1.1` and written next to its source as `<name>.spv` (committed, shipped as
package data, so the runtime never needs a compiler). Every shader is also compiled with the macro definitions of
each entry of `VARIANTS` into `<name>_<suffix>.spv`: `_fp16` (tensors stored as 16-bit floats, fp32 math) for all,
`_fp16a` (16-bit storage and float16 arithmetic) only for shaders whose source has the line `// variants: fp16a`
(those written with the arithmetic types of types.glsl).

Usage:
    python tools/compile_shaders.py            # (re)write the .spv files
    python tools/compile_shaders.py --check    # compile into a temp dir; fail if a committed .spv is stale
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SHADER_DIR = Path(__file__).resolve().parent.parent / "backends" / "vulkan" / "shaders"
TARGET_ENV = "vulkan1.1"
# variant suffix -> macro definitions, built for every shader (fused activations are push constants, not variants).
VARIANTS: dict[str, tuple[str, ...]] = {"fp16": ("FP16",), "fp16a": ("FP16", "FP16_MATH")}
OPT_IN = {"fp16a"}  # variants built only for shaders that declare them with a `// variants: <suffix>` line


class ShaderError(RuntimeError):
    """A shader failed to compile or validate, or a tool is missing."""


def tools_available() -> str | None:
    """None when glslangValidator and spirv-val are on PATH, else a message naming what is missing."""
    missing = [t for t in ("glslangValidator", "spirv-val") if shutil.which(t) is None]
    return None if not missing else f"missing {', '.join(missing)} (apt-get install glslang-tools)"


def targets(shader_dir: Path = SHADER_DIR) -> list[tuple[Path, str, tuple[str, ...]]]:
    """All (source, output .spv name, macro definitions) to build, in a stable order."""
    out: list[tuple[Path, str, tuple[str, ...]]] = []
    for src in sorted(shader_dir.glob("*.comp")):
        out.append((src, f"{src.stem}.spv", ()))
        declared = {w for line in src.read_text().splitlines() if line.startswith("// variants:")
                    for w in line.split(":", 1)[1].split()}
        for suffix, macros in sorted(VARIANTS.items()):
            if suffix not in OPT_IN or suffix in declared:
                out.append((src, f"{src.stem}_{suffix}.spv", macros))
    return out


def compile_one(src: Path, dst: Path, macros: tuple[str, ...] = ()) -> None:
    """Compile one shader to `dst` and validate it.

    Raises:
        ShaderError: with the compiler's or validator's output.
    """
    cmd = ["glslangValidator", "-V", "--target-env", TARGET_ENV, *[f"-D{m}" for m in macros], str(src), "-o", str(dst)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise ShaderError(f"{src.name}: glslangValidator failed:\n{res.stdout}{res.stderr}")
    res = subprocess.run(["spirv-val", "--target-env", TARGET_ENV, str(dst)], capture_output=True, text=True,
                         check=False)
    if res.returncode != 0:
        raise ShaderError(f"{dst.name}: spirv-val failed:\n{res.stdout}{res.stderr}")


def _same(a: Path, b: Path) -> bool:
    if a.read_bytes() == b.read_bytes():
        return True
    if shutil.which("spirv-dis") is None:
        return False
    dis = [subprocess.run(["spirv-dis", "--raw-id", str(p)], capture_output=True, check=False).stdout for p in (a, b)]
    return dis[0] == dis[1] and bool(dis[0])


def build(shader_dir: Path = SHADER_DIR, check: bool = False) -> list[str]:
    """Compile all shaders; with `check`, compile into a temp dir and compare with the committed files.

    Returns:
        Problems found (stale, missing or orphan .spv files in check mode); empty when all is well.

    Raises:
        ShaderError: when a tool is missing or a shader does not compile or validate.
    """
    missing = tools_available()
    if missing:
        raise ShaderError(missing)
    problems: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for src, name, macros in targets(shader_dir):
            fresh = Path(tmp) / name
            compile_one(src, fresh, macros)
            committed = shader_dir / name
            if not check:
                if not committed.exists() or committed.read_bytes() != fresh.read_bytes():
                    shutil.copyfile(fresh, committed)
            elif not committed.exists():
                problems.append(f"{name}: missing (run tools/compile_shaders.py)")
            elif not _same(fresh, committed):
                problems.append(f"{name}: stale, {src.name} changed (run tools/compile_shaders.py)")
    expected = {name for _, name, _ in targets(shader_dir)}
    problems += [f"{p.name}: no source shader" for p in sorted(shader_dir.glob("*.spv")) if p.name not in expected]
    return problems


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a committed .spv is stale")
    parser.add_argument("--dir", type=Path, default=SHADER_DIR, help="shader directory")
    args = parser.parse_args(argv)
    try:
        problems = build(args.dir, check=args.check)
    except ShaderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        count = len(targets(args.dir))
        print(f"{count} shaders {'up to date' if args.check else 'compiled'} in {args.dir}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
