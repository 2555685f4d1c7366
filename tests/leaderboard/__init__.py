"""Tests of ascend_kernel_gym.leaderboard (a package, so that its test_cli.py does not clash with the others)."""
