"""Garg et al.'s model (dtsip/in-context-learning, ``src/models.py``, ``TransformerModel``) on HuggingFace's
GPT-2: the independent reference for icl-sim's ``gpt`` (tests) and its speed (benchmarks)."""
import torch
from torch import nn


class GargTransformer(nn.Module):
    """Garg et al.'s ``TransformerModel``: read-in, HuggingFace ``GPT2Model``, read-out at the x tokens."""

    def __init__(self, dim: int, points: int, n_embd: int, n_layer: int, n_head: int):
        from transformers import GPT2Config, GPT2Model

        super().__init__()
        config = GPT2Config(n_positions=2 * points, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
                            activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                            use_cache=False)
        self.read_in = nn.Linear(dim, n_embd)
        self.backbone = GPT2Model(config)
        self.read_out = nn.Linear(n_embd, 1)

    def forward(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        batch, points, dim = xs.shape
        ys_wide = torch.cat((ys.view(batch, points, 1), xs.new_zeros(batch, points, dim - 1)), dim=2)
        tokens = torch.stack((xs, ys_wide), dim=2).view(batch, 2 * points, dim)
        hidden = self.backbone(inputs_embeds=self.read_in(tokens)).last_hidden_state
        return self.read_out(hidden)[:, ::2, 0]

    def load_weights_of(self, ours: nn.Module) -> "GargTransformer":
        """Our GPT's weights in this model: Conv1D layers hold (in, out), nn.Linear (out, in)."""
        backbone = self.backbone
        layers = [(self.read_in, ours.embedding.read_in, False), (backbone.ln_f, ours.head.ln_f, False),
                  (self.read_out, ours.head.read_out, False)]
        for theirs, mine in zip(backbone.h, ours.blocks):
            layers += [(theirs.ln_1, mine.ln_1, False), (theirs.attn.c_attn, mine.attn.qkv, True),
                       (theirs.attn.c_proj, mine.attn.proj, True), (theirs.ln_2, mine.ln_2, False),
                       (theirs.mlp.c_fc, mine.mlp.fc, True), (theirs.mlp.c_proj, mine.mlp.proj, True)]
        with torch.no_grad():
            backbone.wpe.weight.copy_(ours.embedding.positions.weight)
            for target, source, transposed in layers:
                target.weight.copy_(source.weight.T if transposed else source.weight)
                target.bias.copy_(source.bias)
        return self
