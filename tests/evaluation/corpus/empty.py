# expected: no_code
