"""Sentence embeddings of a BERT sentence-transformers model, computed with NumPy.

``akg kb search`` embeds one short query per process. Importing sentence-transformers (and with
it transformers and torch) takes 5 to 10 s on a small machine, far longer than the query itself;
this encoder needs only NumPy, ``tokenizers`` and ``safetensors`` (a fraction of a second) and
gives the same vectors as sentence-transformers to float32 precision (a test compares them).

It handles the shape of the bundled all-MiniLM-L6-v2 and its relatives: a ``bert`` model with
absolute positions and GELU, followed by mean pooling and optionally normalisation. Any other
model directory is encoded by sentence-transformers (:func:`supports` tells which).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["NumpyBertEncoder", "supports"]

_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"
_WEIGHTS = "model.safetensors"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _pipeline(path: Path) -> tuple[list[str], dict[str, Any]] | None:
    """The module types of a sentence-transformers directory and its pooling config, or ``None``."""
    modules = _read_json(path / "modules.json")
    if not isinstance(modules, list) or not modules:
        return None
    types = [str(m.get("type", "")) for m in modules if isinstance(m, dict)]
    pooling_dir = next((str(m.get("path", "")) for m in modules if m.get("type") == _POOLING), None)
    pooling = _read_json(path / pooling_dir / "config.json") if pooling_dir is not None else None
    return types, pooling if isinstance(pooling, dict) else {}


def supports(path: str | Path) -> bool:
    """Whether :class:`NumpyBertEncoder` can encode the model in ``path`` exactly.

    True for a BERT model (absolute positions, GELU) followed by mean pooling and optionally
    normalisation, with ``model.safetensors`` and ``tokenizer.json`` present.
    """
    path = Path(path)
    config = _read_json(path / "config.json")
    pipeline = _pipeline(path)
    if not isinstance(config, dict) or pipeline is None:
        return False
    types, pooling = pipeline
    mean_only = pooling.get("pooling_mode_mean_tokens") is True and not any(
        pooling.get(key)
        for key in (
            "pooling_mode_cls_token",
            "pooling_mode_max_tokens",
            "pooling_mode_mean_sqrt_len_tokens",
            "pooling_mode_weightedmean_tokens",
            "pooling_mode_lasttoken",
        )
    )
    return (
        config.get("model_type") == "bert"
        and config.get("hidden_act") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and types in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE])
        and mean_only
        and (path / _WEIGHTS).is_file()
        and (path / "tokenizer.json").is_file()
    )


def _erf(x: np.ndarray) -> np.ndarray:
    """``erf`` to about 1e-7 absolute (Abramowitz and Stegun 7.1.26), for the exact GELU."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


class NumpyBertEncoder:
    """A sentence-transformers BERT model (see :func:`supports`) evaluated with NumPy in float32.

    Args:
        path: the model directory.
        max_seq_length: tokens kept per text (default: the directory's ``sentence_bert_config.json``, else 256).

    Raises:
        ValueError: the directory holds a model this encoder does not handle.
    """

    def __init__(self, path: str | Path, max_seq_length: int | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.path = Path(path)
        if not supports(self.path):
            raise ValueError(f"{self.path}: not a BERT + mean-pooling sentence-transformers model")
        config = _read_json(self.path / "config.json")
        types, _ = _pipeline(self.path) or ([], {})
        self.normalize = _NORMALIZE in types
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        st_config = _read_json(self.path / "sentence_bert_config.json") or {}
        limit = max_seq_length or int(st_config.get("max_seq_length") or 256)
        self.max_seq_length = min(limit, int(config.get("max_position_embeddings", 512)))
        self.tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_seq_length)
        self.tokenizer.no_padding()
        weights = load_file(str(self.path / _WEIGHTS))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""
        self.w = {
            key[len(prefix) :]: value.astype(np.float32, copy=False)
            for key, value in weights.items()
            if key.startswith(prefix)
        }
        # Dense layers multiply by the transposed weight: keep it contiguous so each is one BLAS call.
        for name in [k for k in self.w if k.startswith("encoder.") and k.endswith(".weight") and self.w[k].ndim == 2]:
            self.w[name] = np.ascontiguousarray(self.w[name].T)

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Token states of a padded batch: ``ids`` and ``mask`` are ``(batch, length)``."""
        w, batch, length = self.w, ids.shape[0], ids.shape[1]
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        hidden = x.shape[-1]
        head_dim = hidden // self.heads
        # Padded keys get weight exactly 0, as with transformers' most-negative bias (exp of huge negative
        # numbers is slow in NumPy, so the weights are zeroed after the exponential instead).
        key_mask = mask[:, None, None, :]
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def dense(v: np.ndarray, name: str, p: str = p) -> np.ndarray:
                flat = v.reshape(batch * length, v.shape[-1])  # one 2-D product, not one per sequence
                return (flat @ w[p + name + ".weight"] + w[p + name + ".bias"]).reshape(batch, length, -1)

            def split(v: np.ndarray) -> np.ndarray:
                return v.reshape(batch, length, self.heads, head_dim).transpose(0, 2, 1, 3)

            q = split(dense(x, "attention.self.query"))
            k = split(dense(x, "attention.self.key"))
            v = split(dense(x, "attention.self.value"))
            scores = np.einsum("bhqd,bhkd->bhqk", q, k) / np.float32(np.sqrt(head_dim))
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True)) * key_mask
            probs = scores / scores.sum(axis=-1, keepdims=True)
            context = np.einsum("bhqk,bhkd->bqhd", probs, v).reshape(batch, length, hidden)
            x = _layer_norm(
                dense(context, "attention.output.dense") + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                self.eps,
            )
            h = dense(x, "intermediate.dense")
            h = 0.5 * h * (1.0 + _erf(h / np.float32(np.sqrt(2.0))))
            x = _layer_norm(
                dense(h, "output.dense") + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps
            )
        return x

    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 16,
        normalize_embeddings: bool = False,
        convert_to_numpy: bool = True,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """Embeddings, one float32 row per sentence (the arguments of ``SentenceTransformer.encode``).

        ``convert_to_numpy`` and ``show_progress_bar`` are accepted for compatibility; the result is
        always a NumPy array and no bar is shown.
        """
        del convert_to_numpy, show_progress_bar
        texts = [str(s) for s in sentences]
        out = np.zeros((len(texts), self.w["embeddings.word_embeddings.weight"].shape[1]), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))  # little padding per batch
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            length = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), length), dtype=np.int64)
            mask = np.zeros((len(rows), length), dtype=np.float32)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1.0
            states = self._forward(ids, mask)
            pooled = (states * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
            out[rows] = pooled
        if self.normalize or normalize_embeddings:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out
