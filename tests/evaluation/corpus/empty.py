# ruff: noqa
# expected: no_code
