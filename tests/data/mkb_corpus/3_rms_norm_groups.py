import json
import os

import torch
import torch.nn as nn


class Model(nn.Module):
    """RMSNorm with a weight; the cases file is named after this file (stem + ".json")."""

    def forward(self, x, gamma, epsilon: float = 1e-6):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return (x * torch.rsqrt(variance + epsilon)) * gamma


def get_input_groups():
    stem = os.path.splitext(os.path.basename(__file__))[0]
    with open(os.path.join(os.path.dirname(__file__), stem + ".json")) as handle:
        cases = [json.loads(line) for line in handle if line.strip()]
    groups = []
    for case in cases:
        tensors = [torch.randn(spec["shape"]) for spec in case["inputs"] if spec["type"] == "tensor"]
        attrs = [spec["value"] for spec in case["inputs"] if spec["type"] == "attr"]
        groups.append([*tensors, *attrs])
    return groups


def get_init_inputs():
    return []
