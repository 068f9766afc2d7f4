"""Development tools; a package so the tests import them (``from tools.virtual_uno import VirtualUno``)."""
