"""LeRobot datasets: the writer (``writer``: ``DatasetWriter``), the format's layout (``layout``), the dataset it
appends to (``existing``), its meta files (``meta``), its files (``files``), statistics (``stats``),
crash-consistent commits (``commit``), the recorder that feeds it from a follow (``recorder``), cameras
(``camera``)."""

from armctl.core.lazy import reexport

__getattr__, __dir__ = reexport(__name__, "armctl.dataset.writer")
