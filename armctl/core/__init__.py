"""The base layer, what every other package may use: units and number parsing at the edges (``units``,
``numtext``), per-OS folders (``paths``), YAML with line numbers and bounded reads (``config``, ``limits``),
the terminal (``terminal``), Ctrl-C and signals (``stopsignals``), what holds an object alive (``holders``),
tracebacks cut at armctl's first frame (``tracebacks``), lazy re-exports and the old module paths
(``lazy``). The exception tree is ``armctl.errors``."""
