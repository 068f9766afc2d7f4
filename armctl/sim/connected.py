"""Which of a simulated bus's servos are plugged in now: the ``connected=FILE`` option of the bus simulators.

A servo setup (``armctl servos setup``) asks for one servo at a time on the bus; a test, or a person trying the
simulator, plugs them in and out by editing a file between the prompts. The file names the servos by their place
in the URL's ``ids`` list (1: the first listed; several servos may share an id there, as factory-new ones do):
numbers separated by commas, spaces or lines, ``A-B`` ranges, ``#`` comments, or the word ``all``. A missing or
empty file: none connected. The simulator re-reads it before each packet reaches the servos, so a change
counts from the next exchange; a servo unplugged keeps its memory (its EEPROM, and its RAM as if still powered).
"""

from __future__ import annotations

from pathlib import Path

#: the largest file read (a list of places is a few bytes; anything bigger is not one)
MAX_BYTES = 4096


class ConnectedFile:
    """The ``connected`` file of a bus of ``count`` servos: ``places()`` gives the 0-based places plugged in now."""

    def __init__(self, path: str, count: int):
        self.path = Path(path)
        self.count = count

    def places(self) -> frozenset[int]:
        """The 0-based places (in ``ids``) of the servos connected now, read afresh (a few bytes: an edit made
        within the file system's clock tick must count too); numbers outside 1..count are ignored, and a file that
        cannot be read or parsed connects none (as a cable not plugged in)."""
        try:
            with open(self.path, encoding="utf-8") as f:
                text = f.read(MAX_BYTES)
            return frozenset(p - 1 for p in parse_places(text, self.count) if 1 <= p <= self.count)
        except (OSError, UnicodeDecodeError, ValueError):
            return frozenset()


def parse_places(text: str, count: int) -> list[int]:
    """The 1-based places a ``connected`` file's ``text`` names (``all``: 1..count). ValueError if not numbers."""
    words = " ".join(line.split("#", 1)[0] for line in text.splitlines()).replace(",", " ").split()
    if [w.lower() for w in words] == ["all"]:
        return list(range(1, count + 1))
    out: list[int] = []
    for word in words:
        a, dash, b = word.partition("-")
        out.extend(range(int(a), int(b) + 1) if dash else [int(a)])
    return out
