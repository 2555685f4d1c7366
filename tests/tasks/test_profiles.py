"""Small profiles derived to an element budget (tasks/profiles.py, tasks/sizes.py): odd sizes, tuple
assignments, sizes written as keywords or literals, sizes under 128, files that cannot be shrunk."""

from __future__ import annotations

import pytest

from ascend_kernel_gym.cli import main as akg
from ascend_kernel_gym.tasks import load_task_source
from ascend_kernel_gym.tasks.profiles import AUTO_SMALL_TAG, DEFAULT_SMALL_BUDGET, halve
from ascend_kernel_gym.tasks.sizes import SizeModel

HEAD = "import torch\nimport torch.nn as nn\n\n\n"
IDENTITY = "class Model(nn.Module):\n    def forward(self, *xs):\n        return xs[0]\n\n\n"


def task_of(body: str, model: str = IDENTITY, **kwargs):
    return load_task_source(HEAD + model + body, task_id="t/p", **kwargs)


def small_elements(task) -> int:
    import ast

    from ascend_kernel_gym.tasks.constants import constant_steps, evaluate_steps

    tree = ast.parse(task.source)
    overrides = task.profiles["small"]
    constants = evaluate_steps(constant_steps(tree), overrides={k: v for k, v in overrides.items() if "@" not in k})
    sizes = SizeModel(tree)
    literals = {key: overrides.get(key, value) for key, (value, _) in sizes.sites.items()}
    return sizes.estimate(constants, literals).total


def test_halving_keeps_odd_sizes_odd_and_stops_at_the_floor() -> None:
    assert [halve(v) for v in (8205, 4096, 9, 8, 5)] == [4103, 2048, 8, 8, 5]


def test_tuple_assigned_sizes_shrink_and_are_written_back() -> None:
    torch = pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    task = task_of(
        "h, w = 4096, 4096  # image\nbatch = 16\n\n\n"
        "def get_inputs():\n    return [torch.randn(batch, h, w)]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    small = task.profiles["small"]
    assert small["h"] == small["w"] < 4096 and AUTO_SMALL_TAG in task.tags
    assert f"h, w = {small['h']}, {small['w']}  # image" in task.prompt_source("small")
    (x,) = instantiate(task, "small").get_inputs()
    assert tuple(x.shape) == (16, small["h"], small["w"])
    assert x.numel() <= DEFAULT_SMALL_BUDGET
    assert isinstance(x, torch.Tensor)


def test_odd_sizes_over_the_budget_shrink_and_stay_odd() -> None:
    task = task_of(
        "M = 8205\nK = 8205\nN = 8191\n\n\n"
        "def get_inputs():\n    return [torch.randn(M, K), torch.randn(K, N)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    small = task.profiles["small"]
    assert all(small[name] % 2 == 1 for name in ("M", "K", "N"))
    assert small["M"] == small["K"]  # equal sizes stay equal
    assert small_elements(task) <= DEFAULT_SMALL_BUDGET
    assert "derived: 134," in task.profile_note("small")


def test_an_odd_size_within_the_budget_is_kept_and_the_profile_says_so() -> None:
    task = task_of(
        "batch_size = 16\ndim = 8205\n\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, dim)]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    assert task.profiles["small"] == {} and AUTO_SMALL_TAG in task.tags
    assert task.default_profile("interpreter") == "small"
    assert task.profile_note("small") == "the file's own sizes: 131,280 elements, within the budget of 1,000,000"


def test_sizes_written_as_keywords_and_literals_in_get_inputs_shrink() -> None:
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    task = task_of(
        "def get_inputs():\n    return [torch.randn(size=(8192, 8205)), torch.randint(0, 10, (8192,))]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    small = task.profiles["small"]
    assert small and all("get_inputs@" in key for key in small)
    x, labels = instantiate(task, "small").get_inputs()
    assert x.numel() <= DEFAULT_SMALL_BUDGET and x.shape[1] % 2 == 1
    assert labels.shape[0] == x.shape[0] and int(labels.max()) < 10  # the class count (high=10) is not a size
    text = task.prompt_source("small")
    assert f"torch.randn(size=({x.shape[0]}, {x.shape[1]}))" in text and "randint(0, 10," in text
    assert task.prompt_source("full").count("8192") == 2  # the full profile is the file


def test_model_default_sizes_shrink_parameters() -> None:
    pytest.importorskip("torch")
    from ascend_kernel_gym.tasks.runtime import instantiate

    model = (
        "class Model(nn.Module):\n    def __init__(self, in_features=8192, out_features=4096):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(in_features=in_features, out_features=out_features)\n\n"
        "    def forward(self, x):\n        return self.fc(x)\n\n\n"
    )
    task = task_of(
        "def get_inputs():\n    return [torch.randn(32, 8192)]\n\n\ndef get_init_inputs():\n    return []\n", model
    )
    tm = instantiate(task, "small")
    net = tm.Model(*tm.get_init_inputs())
    (x,) = tm.get_inputs()
    params = sum(p.numel() for p in net.parameters())
    assert params + x.numel() <= DEFAULT_SMALL_BUDGET
    assert tuple(net(x).shape) == (32, net.fc.out_features)  # input width and in_features shrank together


def test_sizes_under_128_shrink_to_the_budget_but_kernel_sizes_do_not() -> None:
    model = (
        "class Model(nn.Module):\n    def __init__(self, cin, cout, kernel_size):\n        super().__init__()\n"
        "        self.conv = nn.Conv3d(cin, cout, kernel_size)\n\n"
        "    def forward(self, x):\n        return self.conv(x)\n\n\n"
    )
    task = task_of(
        "batch_size = 16\nin_channels = 3\nout_channels = 64\nkernel_size = 3\n"
        "depth = 64\nheight = 64\nwidth = 64\n\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, in_channels, depth, height, width)]\n\n\n"
        "def get_init_inputs():\n    return [in_channels, out_channels, kernel_size]\n",
        model,
    )
    small = task.profiles["small"]
    assert "kernel_size" not in small and "in_channels" not in small
    assert small_elements(task) <= DEFAULT_SMALL_BUDGET < 16 * 3 * 64**3
    assert min(v for v in small.values()) >= 8


def test_a_file_that_cannot_be_shrunk_says_why(tmp_path, capsys) -> None:
    model = (
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.embedding = nn.Embedding(50257, 1024)\n\n    def forward(self, idx):\n"
        "        return self.embedding(idx)\n\n\n"
    )
    body = (
        "batch_size = 8\nseq_len = 1024\n\n\n"
        "def get_inputs():\n    return [torch.randint(0, 50257, (batch_size, seq_len))]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    task = task_of(body, model)
    note = task.profile_note("small")
    assert note.startswith("cannot be shrunk to the budget") and "parameters alone have 51,463,168" in note
    path = tmp_path / "embedding.py"
    path.write_text(HEAD + model + body)
    assert akg(["tasks", "show", str(path)]) == 0
    assert "small size   cannot be shrunk to the budget" in capsys.readouterr().out


def test_a_size_that_cannot_be_read_is_said_not_silently_fitted() -> None:
    task = task_of(
        'SPEC = "4096x8192"\n\n\n'
        'def get_inputs():\n    return [torch.randn(tuple(int(p) for p in SPEC.split("x")))]\n\n\n'
        "def get_init_inputs():\n    return []\n"
    )
    assert "small" in task.profiles and AUTO_SMALL_TAG in task.tags
    assert task.profile_note("small").startswith("size not fully known from the source")


def test_the_budget_is_configurable(monkeypatch) -> None:
    body = (
        "batch_size = 4096\ndim = 4096\n\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    default = task_of(body)
    tight = task_of(body, small_budget_elems=500)
    assert small_elements(tight) <= 500 < small_elements(default) and tight.size_budget == 500
    monkeypatch.setenv("AKG_SMALL_BUDGET", "600")
    from_env = task_of(body)
    assert from_env.size_budget == 600 and small_elements(from_env) <= 600


def test_a_declared_small_profile_is_kept_and_its_size_reported() -> None:
    task = task_of(
        'TASK = {"profiles": {"small": {"N": 100000}}}\nN = 4096\n\n\n'
        "def get_inputs():\n    return [torch.randn(N, N)]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    assert task.profiles["small"] == {"N": 100000} and AUTO_SMALL_TAG not in task.tags
    assert "above the budget" in task.profile_note("small")


def test_estimates_follow_helper_classes_loops_and_comprehensions() -> None:
    model = (
        "class Block(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n"
        "        self.fc = nn.Linear(d, d)\n\n\n"
        "class Model(nn.Module):\n    def __init__(self, sizes, d):\n        super().__init__()\n"
        "        layers = []\n        current = 4\n        for size in sizes:\n"
        "            layers.append(nn.Linear(current, size))\n            current = size\n"
        "        self.blocks = nn.ModuleList([Block(d + i) for i in range(3)])\n\n"
        "    def forward(self, x):\n        return x\n\n\n"
    )
    import ast

    source = HEAD + model + "def get_inputs():\n    return [torch.randn(2, 4)]\n\n\n"
    source += "def get_init_inputs():\n    return [[8, 16], 10]\n"
    estimate = SizeModel(ast.parse(source)).estimate({}, {})
    linear = (4 * 8 + 8) + (8 * 16 + 16)
    blocks = sum((d * d + d) for d in (10, 11, 12))
    assert estimate.complete and (estimate.inputs, estimate.parameters) == (8, linear + blocks)


def test_profile_elements_and_within_budget_for_the_evaluator() -> None:
    body = (
        "batch_size = 4096\ndim = 4096\n\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, dim)]\n\n\ndef get_init_inputs():\n    return []\n"
    )
    task = task_of(body)
    assert task.profile_elements == {"full": 4096 * 4096, "small": small_elements(task)}
    assert task.within_budget("small") is True and task.within_budget("full") is False
    unknown = task_of(
        'SPEC = "4x8"\n\n\ndef get_inputs():\n    return [torch.randn(tuple(int(p) for p in SPEC.split("x")))]\n\n\n'
        "def get_init_inputs():\n    return []\n"
    )
    assert unknown.profile_elements["small"] is None and unknown.within_budget() is None


def test_larger_fallback_profiles_for_a_reference_that_rejects_the_derived_sizes() -> None:
    import ast

    from ascend_kernel_gym.tasks.profiles import small_fallbacks

    task = task_of(
        "batch_size = 16\nchannels = 64\nsize = 64\n\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, channels, size, size, size)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    fallbacks = small_fallbacks(ast.parse(task.source))
    assert fallbacks and task.profiles["small"] not in fallbacks
    sizes = [max(v for v in f.values()) if f else 64 for f in fallbacks]
    assert sizes == sorted(sizes) and max(task.profiles["small"].values()) < sizes[0]
