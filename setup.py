"""Build of the optional C kernel (armctl._ikcore); everything else is in pyproject.toml.

If no C compiler or Python headers are available the extension is skipped and
armctl.ik uses its pure-Python kernel (same results, slower)."""

from setuptools import Extension, setup

# -ffp-contract=off: no fused multiply-adds, so the C kernel rounds exactly as the Python one does
setup(
    ext_modules=[
        Extension("armctl._ikcore", ["armctl/_ikcore.c"], optional=True, extra_compile_args=["-ffp-contract=off"])
    ]
)
