"""A maker's URDF as an armctl arm: ``parse`` reads the XML into links and joints (bounded, with line numbers),
``derive`` finds the chain armctl can drive and the arm spec it makes (``urdf_spec``, in
phases; ``chain`` holds the first: the tree, the chain, its axes)."""

from armctl.core.lazy import reexport

__getattr__, __dir__ = reexport(__name__, "armctl.model.urdf.derive")
