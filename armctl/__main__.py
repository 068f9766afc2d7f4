import sys

from armctl.cli import main

if __name__ == "__main__":  # not when a child process (multiprocessing) imports it
    sys.exit(main())
