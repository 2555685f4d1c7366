import json
import os

import torch
import torch.nn as nn


class Model(nn.Module):
    """GELU; each case of the JSON-lines file beside this file gives a shape, a dtype and the approximation."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
        return torch.nn.functional.gelu(x, approximate=approximate)


def get_input_groups():
    cases_path = os.path.join(os.path.dirname(__file__), "1_gelu_groups.json")
    with open(cases_path) as handle:
        cases = [json.loads(line) for line in handle if line.strip()]
    dtypes = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
    groups = []
    for case in cases:
        x_spec, approximate_spec = case["inputs"]
        x = torch.randn(x_spec["shape"], dtype=dtypes[x_spec["dtype"]])
        groups.append([x, approximate_spec["value"]])
    return groups


def get_init_inputs():
    return []
