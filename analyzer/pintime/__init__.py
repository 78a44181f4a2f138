"""pintime: execution times of microcontroller code from a GPIO pin recorded by a sound card."""

import os

# One BLAS/OpenMP thread unless the user says otherwise: the analyzer solves many small systems, where a
# thread pool only adds contention (docs/design.md §11, "One BLAS thread", has the figures). It takes
# effect where pintime is imported before numpy (the command line, tools that import it first).
for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")
