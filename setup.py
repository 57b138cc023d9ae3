"""Only computes the package map: backends/, converter/ and schema/ install as mnnpy.backends, ...

Everything else lives in pyproject.toml. Never install top-level `backends`, `converter` or `schema` packages:
they would shadow other distributions.
"""

from setuptools import find_packages, setup

ROOTS = {"mnnpy": "mnnpy", "mnnpy.backends": "backends", "mnnpy.converter": "converter", "mnnpy.schema": "schema"}

packages: list[str] = []
package_dir: dict[str, str] = {}
for pkg, folder in ROOTS.items():
    package_dir[pkg] = folder
    packages.append(pkg)
    packages += [f"{pkg}.{sub}" for sub in find_packages(folder)]

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={
        "mnnpy.schema": ["*.fbs"],
        "mnnpy.backends": ["opencl/kernels/*.cl", "vulkan/shaders/*.comp", "vulkan/shaders/*.spv"],
        "mnnpy": ["data/*"],
    },
)
