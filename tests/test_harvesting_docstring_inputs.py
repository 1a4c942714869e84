"""Forward inputs whose shapes and dtypes the module's own docstring states (numpydoc and Google
styles, as scientific packages write them). Each module is written here in that style."""

from __future__ import annotations

import ast

from test_harvesting_synthesis import HEADER, assert_all_runnable

from autotriton.harvesting.docstring_inputs import docstring_input

# A knowledge-graph embedding model in torchkge's style: integer keys, one per fact of the batch, and
# a margin between the true facts' and the corrupted facts' scores.
TRANSLATION_MODEL = '''
class TranslationModel(nn.Module):
    def __init__(self, emb_dim, n_entities, n_relations):
        super().__init__()
        self.ent_emb = nn.Embedding(n_entities, emb_dim)
        self.rel_emb = nn.Embedding(n_relations, emb_dim)
        self.emb_dim = emb_dim
        self.proj_mat = nn.Parameter(torch.randn(n_relations, emb_dim * emb_dim) / emb_dim)

    def forward(self, heads, tails, relations, negative_heads, negative_tails):
        """

        Parameters
        ----------
        heads: torch.Tensor, dtype: torch.long, shape: (batch_size)
            Integer keys of the current batch's heads
        tails: torch.Tensor, dtype: torch.long, shape: (batch_size)
            Integer keys of the current batch's tails.
        relations: torch.Tensor, dtype: torch.long, shape: (batch_size)
            Integer keys of the current batch's relations.
        negative_heads: torch.Tensor, dtype: torch.long, shape: (batch_size)
            Integer keys of the current batch's negatively sampled heads.
        negative_tails: torch.Tensor, dtype: torch.long, shape: (batch_size)
            Integer keys of the current batch's negatively sampled tails.
        """
        pos = self.score(heads, tails, relations)
        if negative_heads.shape[0] > relations.shape[0]:
            n_neg = negative_heads.shape[0] // relations.shape[0]
            pos, relations = pos.repeat(n_neg), relations.repeat(n_neg)
        neg = self.score(negative_heads, negative_tails, relations)
        return torch.relu(1.0 + neg - pos)

    def score(self, h_idx, t_idx, r_idx):
        # TransR: entities projected into the relation's space by the relation's own matrix
        b_size = h_idx.shape[0]
        proj = self.proj_mat[r_idx].view(b_size, self.emb_dim, self.emb_dim)
        h = torch.matmul(self.ent_emb(h_idx).view(b_size, 1, -1), proj).view(b_size, -1)
        t = torch.matmul(self.ent_emb(t_idx).view(b_size, 1, -1), proj).view(b_size, -1)
        return -(h + self.rel_emb(r_idx) - t).norm(p=2, dim=-1)
'''


def _forward(source: str, cls: str) -> ast.FunctionDef:
    tree = ast.parse(source)
    (klass,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
    return next(n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name == "forward")


def test_numpydoc_and_google_style_shapes_and_dtypes_are_read():
    forward = _forward(HEADER + TRANSLATION_MODEL, "TranslationModel")
    assert docstring_input(forward, "heads", {}, 32, 8) == (
        "torch.randint(0, 2, (2,))", {"kind": "tensor", "shape": [2], "dtype": "int64", "high": 2})
    assert docstring_input(forward, "pos", {}, 32, 8) is None  # not documented
    google = '''
def forward(self, x, edge_weight, img, tokens):
    """Args:
        x (Tensor): node features of shape [num_nodes, in_channels].
        edge_weight (Tensor): one weight per edge, shape (num_edges,)
        img (Tensor): an image.
            Shape: (B, C, H, W)
        tokens (Tensor): shape (B, N, D)
    """
'''
    forward = ast.parse(google).body[0]
    assert docstring_input(forward, "x", {"in_channels": 16}, 32, 8)[1]["shape"] == [8, 16]
    assert docstring_input(forward, "edge_weight", {}, 32, 8)[1] == {"kind": "tensor", "shape": [8], "dtype": "float32"}
    assert docstring_input(forward, "img", {}, 32, 8)[1]["shape"] == [2, 32, 8, 8]
    assert docstring_input(forward, "tokens", {}, 32, 8)[1]["shape"] == [2, 8, 32]  # D a width, not a depth


def test_a_model_whose_docstring_states_integer_keys_becomes_runnable(tmp_path):
    assert_all_runnable(tmp_path, "kge.py", TRANSLATION_MODEL, 1)
