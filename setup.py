"""Builds the optional C extension kafkatool._speedups; everything else is in pyproject.toml.

The extension holds compiled twins of the per-record and per-batch loops (kafkatool/_speedups.c). It is
optional: without a C compiler the install goes on and kafkatool runs its pure-Python paths (the same
results, slower); ``KAFKATOOL_PURE=1`` forces those paths on a built install.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kafkatool._speedups",
            sources=["kafkatool/_speedups.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        )
    ]
)
