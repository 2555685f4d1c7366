"""Test-wide settings: nothing reaches the network, caches go to a temporary directory."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("AKG_CACHE_DIR", tempfile.mkdtemp(prefix="akg-test-cache-"))

# Shared test helpers (fakes, fixtures data) live in tests/support, importable from every test folder.
sys.path.insert(0, str(Path(__file__).parent / "support"))
