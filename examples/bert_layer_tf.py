"""The BERT encoder layer in TensorFlow/Keras, compiled with XLA (``jit_compile=True``).

Same architecture as bert_layer.py. ``hloscope_entries()`` returns named (tf.function,
example arguments) pairs; HLO comes from ``experimental_get_compiler_ir`` (stages ``hlo`` and
``optimized_hlo``).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

CONFIGS = {
    "base": dict(hidden=768, heads=12, intermediate=3072),
    "large": dict(hidden=1024, heads=16, intermediate=4096),
}


class EncoderLayer(tf.keras.layers.Layer):  # type: ignore[misc]
    def __init__(self, hidden: int, heads: int, intermediate: int, **kw: Any) -> None:
        super().__init__(**kw)
        self.attn = tf.keras.layers.MultiHeadAttention(num_heads=heads, key_dim=hidden // heads)
        self.ln1 = tf.keras.layers.LayerNormalization(epsilon=1e-12)
        self.ff1 = tf.keras.layers.Dense(intermediate, activation="gelu")
        self.ff2 = tf.keras.layers.Dense(hidden)
        self.ln2 = tf.keras.layers.LayerNormalization(epsilon=1e-12)

    def call(self, x: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
        attention_mask = tf.cast(mask[:, None, :], tf.bool)
        h = self.ln1(x + self.attn(x, x, attention_mask=attention_mask))
        return self.ln2(h + self.ff2(self.ff1(h)))


def hloscope_entries(size: str = "base", batch: int = 1, seq: int = 128) -> dict[str, Any]:
    cfg = CONFIGS[size]
    layer = EncoderLayer(**cfg)
    x = tf.zeros((batch, seq, cfg["hidden"]))
    mask = tf.ones((batch, seq))
    layer(x, mask)  # build the weights

    @tf.function(jit_compile=True)
    def forward(x: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
        return layer(x, mask)

    optimizer = tf.keras.optimizers.Adam(1e-4)
    optimizer.build(layer.trainable_variables)

    @tf.function(jit_compile=True)
    def train_step(x: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(layer(x, mask) - x))
        grads = tape.gradient(loss, layer.trainable_variables)
        optimizer.apply_gradients(zip(grads, layer.trainable_variables))
        return loss

    return {"forward": (forward, (x, mask)), "train_step": (train_step, (x, mask))}
