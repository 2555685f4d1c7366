"""Leaderboard: the evaluation runner (``akg eval``), metrics and reports (``akg report``), verifiable
submissions (``akg submit`` / ``akg verify``) and the static leaderboard site (``akg leaderboard``).

Nothing here is imported by ``import ascend_kernel_gym``; the modules import torch only inside
functions that need a backend.
"""
