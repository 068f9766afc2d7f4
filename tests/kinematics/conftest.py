"""The kinematics tests' fixtures: ``kernel``, the IK kernels each test runs with."""

from __future__ import annotations

import pytest

from armctl import ik
from tests.helpers import require


@pytest.fixture(scope="module", params=["c", "python"])
def kernel(request):
    """The C kernel (armctl.ik._core), then the pure-Python one (the C kernel taken away): its name. A module
    that runs every test with both says ``pytestmark = pytest.mark.usefixtures("kernel")``."""
    if request.param == "c":
        require(ik.kernel.core is not None, "armctl.ik._core is not built")
        yield request.param
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ik.kernel, "core", None)
        yield request.param
