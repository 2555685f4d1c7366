"""Tests of ascend_kernel_gym.kb_index (a package, so that its test_cli.py does not clash with the others)."""
