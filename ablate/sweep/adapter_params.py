"""How many weights adapter=lora trains, from the model's shape: what the memory planners count as trainable.

peft's "all-linear" puts a rank-r adapter (A: r x in, B: out x r) on every linear layer of a decoder layer but
the output head: q and o (h -> h), k and v (h -> kv_dim), gate and up (h -> inter), down (inter -> h), so
r (9h + 2 kv_dim + 3 inter) weights a layer. A list of target modules counts the ones it names among those
seven (a name outside them, unknown here, counts as all seven: an upper bound).
"""

from __future__ import annotations

LLAMA_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def lora_params(adapter, shape) -> float:
    """Adapter weights of the whole model for a ``Shape`` (ablate.sweep.memory)."""
    h, kv = shape.hidden, shape.kv_heads * shape.hidden // shape.heads
    inter = shape.inter or _inter_from_params(shape)
    sizes = {"q_proj": 2 * h, "o_proj": 2 * h, "k_proj": h + kv, "v_proj": h + kv,
             "gate_proj": h + inter, "up_proj": h + inter, "down_proj": inter + h}  # fmt: skip
    targets = adapter.target_modules
    names = LLAMA_LINEARS if isinstance(targets, str) or not set(targets) <= set(LLAMA_LINEARS) else targets
    return float(adapter.rank * shape.layers * sum(sizes[n] for n in names))


def _inter_from_params(shape) -> float:
    """A declared shape names no MLP width: the one its parameter count implies, with tied embeddings assumed
    (the wider of the two readings: SmolLM2's 134.5M give its 1,536)."""
    h, kv = shape.hidden, shape.kv_heads * shape.hidden // shape.heads
    per_layer = (shape.params - shape.vocab * h) / shape.layers
    return max(0.0, (per_layer - 2 * h * h - 2 * h * kv) / (3 * h))
