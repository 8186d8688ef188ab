"""``python -m kafkatool``: the same entry point as the ``kafkatool`` console script."""

from kafkatool.commands.app import main

main()
