"""Our firmware's protocol: frames and their codec (``codec``), the acknowledged link (``link``), the backend
(``backend``)."""

from armctl.core.lazy import reexport

__getattr__, __dir__ = reexport(__name__, "armctl.bus.armproto.backend")
