"""A GPT-style decoder-only transformer: token and position embeddings, pre-norm blocks of
causal self-attention (`F.scaled_dot_product_attention`) and an MLP, a final norm, and an
output layer that shares the token embedding's weights (weight tying)."""

from __future__ import annotations

import math
import re

import torch
import torch.nn.functional as F
from torch import nn

import burnish as bn
from burnish.optim import ParamGroup
from burnish.train import SequenceOutput, TrainOutput

from examples.language_model.data import VOCAB_SIZE


@bn.config
class GptConfig:
    """The model's shape.

    Args:
        vocab_size: tokens (256: bytes).
        context_length: the longest sequence (the position embeddings).
        d_model: width of the residual stream.
        num_layers: transformer blocks.
        num_heads: attention heads (`d_model` must be a multiple).
        mlp_ratio: the MLP's hidden width over `d_model`.
        dropout: on the embeddings, attention and each block's outputs.
    """

    vocab_size: int = VOCAB_SIZE
    context_length: int = 128
    d_model: int = 128
    num_layers: int = 4
    num_heads: int = 4
    mlp_ratio: int = 4
    dropout: float = 0.0

    def init(self, device: torch.device | str | None = None) -> Gpt:
        """Returns the initialized model."""
        if self.d_model % self.num_heads:
            raise ValueError(
                f"`d_model` must be a multiple of `num_heads`. Received: d_model={self.d_model}, "
                f"num_heads={self.num_heads}."
            )
        return Gpt(self).to_device(device or "cpu")


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GptConfig) -> None:
        super().__init__()
        self.num_heads, self.dropout = config.num_heads, config.dropout
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.proj = nn.Linear(config.d_model, config.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        q, k, v = self.qkv(x).split(width, dim=2)
        q, k, v = (t.view(batch, length, self.num_heads, -1).transpose(1, 2) for t in (q, k, v))
        dropout = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(batch, length, width))


class Block(nn.Module):
    """Pre-norm: `x + attention(norm(x))`, then `x + mlp(norm(x))`."""

    def __init__(self, config: GptConfig) -> None:
        super().__init__()
        hidden = config.mlp_ratio * config.d_model
        self.norm1 = nn.LayerNorm(config.d_model)
        self.attention = CausalSelfAttention(config)
        self.norm2 = nn.LayerNorm(config.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(config.d_model, hidden), nn.GELU(), nn.Linear(hidden, config.d_model)
        )
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.dropout(self.attention(self.norm1(x)))
        return x + self.dropout(self.mlp(self.norm2(x)))


class Gpt(bn.Module):
    def __init__(self, config: GptConfig) -> None:
        super().__init__()
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = nn.Embedding(config.context_length, config.d_model)
        self.dropout = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.num_layers))
        self.norm = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.head.weight = self.token_embedding.weight  # weight tying
        self.apply(_init_weights)
        for name, param in self.named_parameters():  # GPT-2: residual outputs scaled down
            if name.endswith(("proj.weight", "mlp.2.weight")):
                nn.init.normal_(param, std=0.02 / math.sqrt(2 * config.num_layers))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Tokens `[batch, length]` -> logits `[batch, length, vocab_size]`."""
        length = tokens.shape[1]
        if length > self.config.context_length:
            raise ValueError(
                f"The sequence has {length} tokens; the model's context_length is "
                f"{self.config.context_length}. Crop the input to its last "
                f"{self.config.context_length} tokens."
            )
        positions = torch.arange(length, device=tokens.device)
        x = self.dropout(self.token_embedding(tokens) + self.position_embedding(positions))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))

    def forward_sequence(self, inputs: torch.Tensor, targets: torch.Tensor) -> SequenceOutput:
        logits = self.forward(inputs)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())
        return SequenceOutput(loss, logits, None, targets)

    def train_step(self, batch) -> TrainOutput:
        item = self.forward_sequence(batch.inputs, batch.targets)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch) -> SequenceOutput:
        return self.forward_sequence(batch.inputs, batch.targets)

    def no_decay_parameters(self) -> list[str]:
        """Names of the parameters without weight decay: norms, biases and embeddings (the
        output layer is the token embedding, tied)."""
        return [
            name for name, param in self.named_parameters() if param.ndim < 2 or "embedding" in name
        ]

    def no_decay_group(self) -> ParamGroup:
        """`no_decay_parameters()` as a parameter group (their exact paths)."""
        names = "|".join(re.escape(name) for name in self.no_decay_parameters())
        return ParamGroup.from_regex(f"^(?:{names})$")

    @torch.no_grad()
    def generate(
        self,
        prompt: torch.Tensor,
        num_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """`prompt` `[batch, length]` followed by `num_tokens` sampled tokens.

        Each token is drawn from `softmax(logits / temperature)` over the `top_k` most likely
        (all with None); temperature 0 takes the most likely. Run it on `model.valid()`.
        """
        if temperature < 0:
            raise ValueError(f"`temperature` must be >= 0. Received: temperature={temperature}.")
        if top_k is not None and top_k < 1:
            raise ValueError(f"`top_k` must be >= 1 or None. Received: top_k={top_k}.")
        tokens = prompt
        for _ in range(num_tokens):
            logits = self.forward(tokens[:, -self.config.context_length :])[:, -1].float()
            if temperature == 0:
                following = logits.argmax(dim=-1, keepdim=True)
            else:
                logits = logits / temperature
                if top_k is not None and top_k < logits.shape[-1]:
                    kth = logits.topk(top_k, dim=-1).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, -math.inf)
                probabilities = logits.softmax(dim=-1)
                following = torch.multinomial(probabilities, 1, generator=generator)
            tokens = torch.cat([tokens, following], dim=1)
        return tokens


def _init_weights(module: nn.Module) -> None:
    """GPT-2's initialization: normal(0, 0.02) weights, zero biases."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
