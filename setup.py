"""Build of the optional C kernel (armctl.ik._core); everything else is in pyproject.toml.

If no C compiler or Python headers are available the extension is skipped and
armctl.ik uses its pure-Python kernel (same results, slower)."""

import sys

from setuptools import Extension, setup

# No fused multiply-adds, so the C kernel rounds exactly as the Python one does: -ffp-contract=off for gcc and
# clang (Apple's clang contracts by default); MSVC takes no such flag (it warns D9002): /fp:precise, which in
# Visual Studio 2022 contracts nothing (and its default x64 target, SSE2, has no FMA instruction anyway).
# -fno-math-errno: the kernel never reads errno, and without it gcc follows every sqrt instruction with a check and
# a libm call for negative input only to set errno (clang's default on macOS); the results are the same doubles.
NO_FMA = ["/fp:precise"] if sys.platform == "win32" else ["-ffp-contract=off", "-fno-math-errno"]
setup(ext_modules=[Extension("armctl.ik._core", ["armctl/ik/_core.c"], optional=True, extra_compile_args=NO_FMA)])
