"""Task tests run Triton kernels in-process on Triton's CPU interpreter.

``TRITON_INTERPRET`` must be set before any ``@triton.jit`` function is created; conftest files are
imported before the test modules of their directory, so setting it here covers every test below.
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"
