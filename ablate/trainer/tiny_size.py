"""The embedded model's size from its config alone (no torch): what the report's header and the launch guard
count."""

from __future__ import annotations


def tiny_vocab(alphabet: str) -> int:
    """pad/bos/eos + one id per character of the task's alphabet."""
    return 3 + len(set(alphabet))


def tiny_param_count(model, vocab_size: int) -> int:
    """Parameters of the embedded Llama-style model (tied embeddings, no biases): embedding, per layer
    q/k/v/o (4 h²) + gated MLP (3 h·i) + two RMSNorms (2 h), final RMSNorm. ``model``: a dict or a config."""
    get = model.get if isinstance(model, dict) else lambda k: getattr(model, k)
    h, i, n = get("hidden_size"), get("intermediate_size"), get("num_layers")
    return vocab_size * h + n * (4 * h * h + 3 * h * i + 2 * h) + h
