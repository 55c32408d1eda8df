"""A BERT encoder's forward pass in numpy (sentence-transformers weight names): the query
encoder of the transformer model (`transformer.py`, no onnxruntime session on a cold recall)
and the teacher `distil.py` distils static vectors from."""

from __future__ import annotations

from typing import Any


def _layer_norm(x: Any, w: Any, b: Any, eps: float) -> Any:
    import numpy as np

    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _gelu(x: Any) -> Any:
    import numpy as np

    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def bert_forward(w: dict[str, Any], cfg: dict[str, Any], ids: Any, mask: Any) -> Any:
    """Last hidden states (batch, length, hidden) of a BERT encoder (sentence-transformers
    weight names). Every linear layer is one 2-D product over all batch x length rows."""
    import numpy as np

    eps = float(cfg.get("layer_norm_eps", 1e-12))
    batch, length = ids.shape
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:length][None]
        + w["embeddings.token_type_embeddings.weight"][0]
    ).reshape(batch * length, -1)
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    heads = int(cfg["num_attention_heads"])
    width = x.shape[-1] // heads
    bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9
    for n in range(int(cfg["num_hidden_layers"])):
        p = f"encoder.layer.{n}."

        def lin(h: Any, name: str, p: str = p) -> Any:
            return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        def split(h: Any) -> Any:  # (batch*length, hidden) -> (batch, heads, length, width)
            return h.reshape(batch, length, heads, width).transpose(0, 2, 1, 3)

        q = split(lin(x, "attention.self.query"))
        k = split(lin(x, "attention.self.key"))
        v = split(lin(x, "attention.self.value"))
        att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(width) + bias
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(batch * length, heads * width)
        x = _layer_norm(
            x + lin(ctx, "attention.output.dense"),
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
            eps,
        )
        hidden = _gelu(lin(x, "intermediate.dense"))
        x = _layer_norm(
            x + lin(hidden, "output.dense"),
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
            eps,
        )
    return x.reshape(batch, length, -1)
