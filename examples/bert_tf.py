"""BERT as the reference TensorFlow code builds it (google-research/bert: modeling.py,
optimization.py), in TensorFlow 2 with ``tf.function(jit_compile=True)``: the question's own
model. Word, position and token-type embeddings; 12 or 24 encoder layers; the classifier head
of ``run_classifier.py`` (``--set head=classifier``, the default) or pre-training's masked-LM
and next-sentence heads (``--set head=pretraining``, 20 predictions per sequence); dropout
0.1; ``AdamWeightDecayOptimizer`` after ``clip_by_global_norm(1.0)``, each variable updated in
place with ``assign``.

Written the way TensorFlow 1.x wrote it, so that the ops are the reference code's ops:
dropout is ``floor(keep_prob + random_uniform)`` times ``x / keep_prob`` (an f32 mask kept for
the backward pass), GELU is the tanh approximation, layer norm is ``tf.nn.moments`` and
``batch_normalization``'s arithmetic, attention masks add ``-10000``.

    hloscope fit examples/bert_tf.py --vary batch --budget titan-x --set size=large --set seq=512

The variables are real ``tf.Variable``s (TensorFlow needs them to exist): BERT-Large's weights
and both moments take about 4 GiB of this machine's memory while the entry is built. The
inputs are shape-only ``tf.TensorSpec``s.
"""

from __future__ import annotations

import math
from typing import Any

import tensorflow as tf

CONFIGS = {
    "base": dict(hidden=768, heads=12, intermediate=3072, layers=12),
    "large": dict(hidden=1024, heads=16, intermediate=4096, layers=24),
}
VOCAB, MAX_POSITIONS, TYPES, PREDICTIONS = 30522, 512, 2, 20


class Bert(tf.Module):  # type: ignore[misc]
    def __init__(self, size: str, head: str, layers: int = 0) -> None:
        super().__init__()
        cfg = dict(CONFIGS[size])
        if layers:
            cfg["layers"] = layers
        h, inter = cfg["hidden"], cfg["intermediate"]
        self.heads, self.head = cfg["heads"], head
        self.weights: dict[str, tf.Variable] = {}
        self._add("word", (VOCAB, h))
        self._add("position", (MAX_POSITIONS, h))
        self._add("token_type", (TYPES, h))
        self._norm("emb", h)
        for i in range(cfg["layers"]):
            for name in ("q", "k", "v", "o"):
                self._dense(f"l{i}/{name}", h, h)
            self._norm(f"l{i}/attention_ln", h)
            self._dense(f"l{i}/intermediate", h, inter)
            self._dense(f"l{i}/output", inter, h)
            self._norm(f"l{i}/output_ln", h)
        self._dense("pooler", h, h)
        if head == "pretraining":
            self._dense("mlm/transform", h, h)
            self._norm("mlm", h)
            self._add("mlm/output_bias", (VOCAB,))
            self._dense("nsp", h, 2)
        else:
            self._dense("classifier", h, 2)
        self.m = {k: tf.Variable(tf.zeros_like(v), name=k + "/adam_m")
                  for k, v in self.weights.items()}
        self.v = {k: tf.Variable(tf.zeros_like(v), name=k + "/adam_v")
                  for k, v in self.weights.items()}

    def _add(self, name: str, shape: tuple[int, ...]) -> None:
        self.weights[name] = tf.Variable(tf.zeros(shape), name=name)

    def _dense(self, name: str, n_in: int, n_out: int) -> None:
        self._add(name + "/kernel", (n_in, n_out))
        self._add(name + "/bias", (n_out,))

    def _norm(self, name: str, n: int) -> None:
        self._add(name + "/gamma", (n,))
        self._add(name + "/beta", (n,))


def dropout(x: tf.Tensor, rate: float) -> tf.Tensor:
    """TensorFlow 1.x's ``tf.nn.dropout``: an f32 mask from ``floor``."""
    if rate == 0.0:
        return x
    keep = 1.0 - rate
    binary = tf.floor(keep + tf.random.uniform(tf.shape(x)))
    return tf.math.divide(x, keep) * binary


def gelu(x: tf.Tensor) -> tf.Tensor:
    return 0.5 * x * (1.0 + tf.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))


def layer_norm(w: dict[str, tf.Variable], name: str, x: tf.Tensor) -> tf.Tensor:
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(variance + 1e-12) * w[name + "/gamma"] + \
        w[name + "/beta"]


def dense(w: dict[str, tf.Variable], name: str, x: tf.Tensor) -> tf.Tensor:
    return tf.matmul(x, w[name + "/kernel"]) + w[name + "/bias"]


def encoder(model: Bert, ids: tf.Tensor, types: tf.Tensor, mask: tf.Tensor,
            rate: float) -> tf.Tensor:
    w = model.weights
    batch, seq = ids.shape
    h = w["word"].shape[1]
    d = h // model.heads
    x = tf.gather(w["word"], ids) + tf.gather(w["token_type"], types) + w["position"][:seq]
    x = dropout(layer_norm(w, "emb", x), rate)
    adder = (1.0 - tf.cast(mask[:, None, None, :], tf.float32)) * -10000.0
    flat = tf.reshape(x, [batch * seq, h])
    for i in range(len([k for k in w if k.endswith("/q/kernel")])):
        def heads(t: tf.Tensor) -> tf.Tensor:
            return tf.transpose(tf.reshape(t, [batch, seq, model.heads, d]), [0, 2, 1, 3])
        q, k, v = (heads(dense(w, f"l{i}/{n}", flat)) for n in ("q", "k", "v"))
        scores = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(d)) + adder
        probs = dropout(tf.nn.softmax(scores), rate)
        ctx = tf.reshape(tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3]), [batch * seq, h])
        attention = dropout(dense(w, f"l{i}/o", ctx), rate)
        flat = layer_norm(w, f"l{i}/attention_ln", attention + flat)
        inner = gelu(dense(w, f"l{i}/intermediate", flat))
        out = dropout(dense(w, f"l{i}/output", inner), rate)
        flat = layer_norm(w, f"l{i}/output_ln", out + flat)
    return tf.reshape(flat, [batch, seq, h])


def loss_fn(model: Bert, ids: tf.Tensor, types: tf.Tensor, mask: tf.Tensor,
            labels: tf.Tensor, positions: tf.Tensor, rate: float) -> tf.Tensor:
    w = model.weights
    x = encoder(model, ids, types, mask, rate)
    pooled = tf.tanh(dense(w, "pooler", x[:, 0]))
    if model.head == "pretraining":
        # The masked positions' vectors, transformed and scored against the word embeddings.
        picked = tf.gather(x, positions, batch_dims=1)
        t = layer_norm(w, "mlm", gelu(dense(w, "mlm/transform", picked)))
        logits = tf.matmul(t, w["word"], transpose_b=True) + w["mlm/output_bias"]
        mlm = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels[:, 1:], logits=logits))
        nsp = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels[:, 0], logits=dense(w, "nsp", pooled)))
        return mlm + nsp
    logits = dense(w, "classifier", dropout(pooled, rate))
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                        logits=logits))


def apply_gradients(model: Bert, grads: list[tf.Tensor]) -> tf.Operation:
    """optimization.py's AdamWeightDecayOptimizer (lr 2e-5, beta 0.9/0.999, eps 1e-6,
    weight decay 0.01 but not on LayerNorm or biases, no bias correction)."""
    updates = []
    for (name, p), g in zip(model.weights.items(), grads):
        m, v = model.m[name], model.v[name]
        g = tf.convert_to_tensor(g)  # an embedding's IndexedSlices, dense as TF 1.x made it
        next_m = 0.9 * m + 0.1 * g
        next_v = 0.999 * v + 0.001 * tf.square(g)
        update = next_m / (tf.sqrt(next_v) + 1e-6)
        if not (name.endswith(("/gamma", "/beta", "/bias"))):
            update += 0.01 * p
        updates += [p.assign(p - 2e-5 * update), m.assign(next_m), v.assign(next_v)]
    return tf.group(*updates)


def hloscope_entries(size: str = "base", batch: int = 1, seq: int = 128,
                     head: str = "classifier", dropout_rate: float = 0.1,
                     layers: int = 0) -> dict[str, Any]:
    """``layers``: another number of encoder layers than the size's own (0: 12 or 24)."""
    if head not in ("classifier", "pretraining"):
        raise ValueError(f"head={head!r}: choose classifier or pretraining")
    model = Bert(size, head, layers)
    variables = list(model.weights.values())

    @tf.function(jit_compile=True)
    def train_step(ids: tf.Tensor, types: tf.Tensor, mask: tf.Tensor, labels: tf.Tensor,
                   positions: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = loss_fn(model, ids, types, mask, labels, positions, dropout_rate)
        grads = tape.gradient(loss, variables)
        grads, _ = tf.clip_by_global_norm(grads, clip_norm=1.0)
        apply_gradients(model, grads)
        return loss

    spec = tf.TensorSpec
    labels = spec((batch, 1 + PREDICTIONS), tf.int32) if head == "pretraining" else \
        spec((batch,), tf.int32)
    args = (spec((batch, seq), tf.int32), spec((batch, seq), tf.int32),
            spec((batch, seq), tf.int32), labels, spec((batch, PREDICTIONS), tf.int32))
    return {"train_step": (train_step, args)}
