"""``python -m graphmem.cli``: the same as the ``graphmem`` console script."""

from graphmem.cli import main

main()
