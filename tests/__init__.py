"""armctl's tests: a package, so a test imports shared helpers by name (tests/README.md), with no sys.path edits."""
