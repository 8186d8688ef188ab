"""The kafkatool CLI: one Typer module per subcommand, thin: parse, call the library, render."""

import os as _os

# numpy (the index rebuild's arrays) loads OpenBLAS, which starts a spinning thread per core: about 0.1 s of
# CPU per command run for linear algebra kafkatool never does. Set before anything below imports numpy; the
# library itself leaves the environment alone.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
