"""Forward inputs that are dicts of tensors (issue 13). sentence-transformers' modules take a
`features` dict, read some keys and write others; the harvester used to hand them `dict()` (a
mapping, no keys), and they ended as no_working_inputs on a KeyError. Each module below is written
here in that style and must become a runnable problem through the real harvest path (the
validation sandbox's probe), with a dict holding the keys forward reads and no key it only writes."""

from __future__ import annotations

import ast

import pytest
import torch

from autotriton.harvesting import HarvestConfig, harvest_local
from autotriton.harvesting.dict_inputs import read_keys
from tests.test_harvesting_forward_forms import _harvest, _load
from tests.test_harvesting_synthesis import HEADER

SENTENCE_MODULES = '''
from typing import Dict

import torch.nn.functional as F
from torch import Tensor


class Pooling(nn.Module):
    """Mean pooling of the token embeddings over the attention mask."""

    def __init__(self, word_embedding_dimension: int, include_prompt: bool = True):
        super().__init__()
        self.word_embedding_dimension = word_embedding_dimension
        self.include_prompt = include_prompt

    def forward(self, features: Dict[str, Tensor]) -> Dict[str, Tensor]:
        token_embeddings = features["token_embeddings"]
        attention_mask = features["attention_mask"]
        if not self.include_prompt and "prompt_length" in features:
            attention_mask[:, : features["prompt_length"]] = 0
        input_mask_expanded = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
        sum_embeddings = torch.sum(token_embeddings * input_mask_expanded, 1)
        sum_mask = torch.clamp(input_mask_expanded.sum(1), min=1e-9)
        features.update({"sentence_embedding": sum_embeddings / sum_mask})
        return features


class Dense(nn.Module):
    """A feed-forward layer over the sentence embedding."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.activation_function = nn.Tanh()

    def forward(self, features: dict[str, Tensor]):
        features.update({"sentence_embedding": self.activation_function(self.linear(features["sentence_embedding"]))})
        return features


class Normalize(nn.Module):
    """L2-normalises the sentence embedding, in place in the dict."""

    def forward(self, features):
        features["sentence_embedding"] = F.normalize(features["sentence_embedding"], p=2, dim=1)
        return features
'''


def _inputs(problem_source: str) -> dict:
    """The problem's get_inputs(), run from its own source alone (it must stand alone)."""
    ns = _load(problem_source)
    torch.manual_seed(0)
    (features,) = ns["get_inputs"]()
    assert isinstance(features, dict) and all(isinstance(v, torch.Tensor) for v in features.values())
    model = ns["Model"](*ns["get_init_inputs"]()).eval()
    with torch.no_grad():
        model(dict(features))
    return features


def test_modules_reading_a_features_dict_become_runnable_problems(tmp_path):
    problems = _harvest(tmp_path, "sentence.py", SENTENCE_MODULES)
    assert set(problems) == {"Pooling", "Dense", "Normalize"}
    pooling = _inputs(problems["Pooling"].reference_source)
    # the keys read; not the one only written (sentence_embedding), nor the optional prompt_length
    assert list(pooling) == ["token_embeddings", "attention_mask"]
    mask, tokens = pooling["attention_mask"], pooling["token_embeddings"]
    # converted by forward (`.float()`): integer ones, as a tokenizer hands them over, over the tokens
    assert mask.dtype == torch.int64 and bool((mask == 1).all()) and mask.shape == tokens.shape[:-1]
    assert problems["Pooling"].input_spec[0]["kind"] == "tensor_dict"
    # written after it is read: an input
    assert list(_inputs(problems["Dense"].reference_source)) == ["sentence_embedding"]
    assert list(_inputs(problems["Normalize"].reference_source)) == ["sentence_embedding"]


def _forward(body: str) -> ast.FunctionDef:
    return ast.parse("def forward(self, features):\n" + "".join(f"    {line}\n" for line in body.splitlines())).body[0]


@pytest.mark.parametrize("body, keys", [
    ('return features["a"] + features.get("b")', ["a"]),  # .get: optional, beside a required key
    ('return features.get("b")', ["b"]),  # ... the only key read: needed after all
    ('features["e"] = features["e"] * 2\nreturn features', ["e"]),  # read, then written
    ('features["e"] = features["x"] * 2\nreturn features["e"]', ["x"]),  # written, then read: an output
    ('if "w" in features:\n    return features["w"] * features["x"]\nreturn features["x"]', ["x"]),
    ('y = features.pop("x")\nfeatures.update(z=y)\nreturn features["z"]', ["x"]),
])
def test_the_keys_read_before_forward_writes_them_are_the_inputs(body, keys):
    assert read_keys(_forward(body), "features") == keys


KEYED_DENSE = '''
from torch import Tensor


class KeyedDense(nn.Module):
    """sentence-transformers 6.x: the keys it reads and writes are constructor arguments."""

    def __init__(self, in_features: int, out_features: int, module_input_name: str = "sentence_embedding",
                 module_output_name: str | None = None):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.module_input_name = module_input_name
        self.module_output_name = module_output_name if module_output_name is not None else module_input_name

    def forward(self, features: dict[str, Tensor]):
        x = features[self.module_input_name]
        features[self.module_output_name] = torch.tanh(self.linear(x))
        return features
'''


def test_a_key_held_in_an_attribute_set_from_a_string_default_is_read_as_that_key(tmp_path):
    """`features[self.module_input_name]` with `module_input_name="sentence_embedding"` (set 12:
    Dense failed with KeyError: 'sentence_embedding'): the dict holds that key, sized for the layer."""
    problems = _harvest(tmp_path, "keyed.py", KEYED_DENSE)
    features = _inputs(problems["KeyedDense"].reference_source)
    assert list(features) == ["sentence_embedding"]
    ns = _load(problems["KeyedDense"].reference_source)
    model = ns["Model"](*ns["get_init_inputs"]())
    assert features["sentence_embedding"].shape[-1] == model.linear.in_features


# -- time-series batches: a dict of a series and the masks of its missing values ---------------

SERIES_MODULES = '''
class SeriesImputer(nn.Module):
    """Fills the missing values of a multivariate series from a recurrent encoding."""

    def __init__(self, n_steps, n_features, hidden_size):
        super().__init__()
        self.n_steps = n_steps
        self.rnn = nn.GRU(n_features * 2, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, n_features)

    def forward(self, inputs, training=False):
        X, missing_mask = inputs["X"], inputs["missing_mask"]
        h, _ = self.rnn(torch.cat([X * missing_mask, missing_mask], dim=2))
        imputed = missing_mask * X + (1 - missing_mask) * self.out(h)
        results = {"imputation": imputed}
        if training:
            results["loss"] = ((imputed - X) ** 2 * missing_mask).mean()
        return results


class PairedForecaster(nn.Module):
    """Scores a forecast against its target, each with its own mask of observed values."""

    def __init__(self, n_features, d_model):
        super().__init__()
        self.encode = nn.Linear(n_features, d_model)
        self.decode = nn.Linear(d_model, n_features)

    def forward(self, inputs):
        X, X_pred = inputs["X"], inputs["X_pred"]
        h = torch.relu(self.encode(X * inputs["missing_mask"]))
        error = (self.decode(h) - X_pred) * inputs["X_pred_missing_mask"]
        return {"forecasting": self.decode(h), "error": error}
'''


def test_masks_of_missing_values_cover_every_value_of_their_series(tmp_path):
    """A time-series batch (pypots' models, set 23: 53 rejected) holds the series and masks of its
    missing values, one mask value per series value. Masks guessed as attention masks (one per
    step) failed in `torch.cat([X, missing_mask], dim=2)`; all-ones masks left an imputer returning
    its input. The masks now have their series' shape, with zeros among the ones, and a mask named
    after another key (`X_pred_missing_mask`) has that key's shape."""
    problems = _harvest(tmp_path, "series.py", SERIES_MODULES)
    batch = _inputs(problems["SeriesImputer"].reference_source)
    assert list(batch) == ["X", "missing_mask"]
    mask = batch["missing_mask"]
    assert mask.shape == batch["X"].shape and mask.dtype == batch["X"].dtype
    assert set(mask.unique().tolist()) == {0.0, 1.0}
    pair = _inputs(problems["PairedForecaster"].reference_source)
    assert pair["missing_mask"].shape == pair["X"].shape
    assert pair["X_pred_missing_mask"].shape == pair["X_pred"].shape


def test_a_shape_repair_resizes_every_tensor_of_a_dict_alike():
    """torch's matmul error names the size a Linear wanted; in a dict input every tensor of the
    wrong size changes, so a series and its mask keep one shape (they used to be repaired one by
    one, by the shape solver alone, into shapes that disagreed)."""
    from autotriton.harvesting.input_repair import repair_attempt
    from autotriton.harvesting.synthesis import Attempt

    items = {"X": {"kind": "tensor", "shape": [2, 8, 8], "dtype": "float32"},
             "missing_mask": {"kind": "tensor", "shape": [2, 8, 8], "dtype": "float32", "range": "binary"},
             "step": {"kind": "tensor", "shape": [2], "dtype": "int64"}}
    code = "{'X': torch.randn(2, 8, 8), 'missing_mask': torch.randint(0, 2, (2, 8, 8)).float(), 'step': torch.randint(0, 10, (2,))}"
    attempt = Attempt([], [], [code], [{"kind": "tensor_dict", "items": items}])
    fixed = repair_attempt(attempt, "RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x8 and 32x64)")
    assert fixed is not None
    new = fixed.input_spec[0]["items"]
    assert new["X"]["shape"] == new["missing_mask"]["shape"] == [2, 8, 32]
    assert new["step"] == items["step"]  # integer tensors are not features
    batch = eval(fixed.input_code[0], {"torch": torch})
    assert batch["X"].shape == batch["missing_mask"].shape == (2, 8, 32)
    assert set(batch["missing_mask"].unique().tolist()) <= {0.0, 1.0}  # still a mask


DICT_RESULTS = '''
class Scorer(nn.Module):
    """Returns its results in a dict, as the models of training frameworks do."""

    def __init__(self, in_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, 1)

    def forward(self, x: torch.Tensor) -> dict:
        return {"score": self.linear(x).squeeze(-1)}
'''


def test_a_model_rewrite_costs_no_input_guess(tmp_path):
    """Forward ran on the guess but returned a dict: the same guess again, with Model returning its
    tensors as a tuple, is one more round, not one of harvest.max_attempts' guesses (a module whose
    last guess ran was rejected; pypots' _Transformer in set 23)."""
    (tmp_path / "scorer.py").write_text(HEADER + DICT_RESULTS)
    result = harvest_local(tmp_path, HarvestConfig(incremental=False, max_attempts=1))
    (problem,) = result.problems
    assert (problem.status, problem.reject_reason) == ("runnable", None), result.details.get(problem.key)
    ns = _load(problem.reference_source)
    out = ns["Model"](*ns["get_init_inputs"]())(*ns["get_inputs"]())
    assert isinstance(out, tuple) and isinstance(out[0], torch.Tensor)


# -- keys named by the module's constants (nequip's AtomicDataDict) ----------------------------

CONSTANT_KEYED = '''
POSITIONS_KEY = "pos"
NODE_FEATURES_KEY = "node_features"


class GraphFields:
    """The keys of a graph dict, as nequip's AtomicDataDict names them."""

    EDGE_WEIGHT_FIELD = "edge_weight"


class PositionEmbedding(nn.Module):
    """Embeds each atom's position and writes the node features into the graph dict."""

    def __init__(self, dim: int):
        super().__init__()
        self.proj = nn.Linear(3, dim)

    def forward(self, data):
        pos = data[POSITIONS_KEY]
        data[NODE_FEATURES_KEY] = torch.tanh(self.proj(pos))
        return data


class FeatureScale(nn.Module):
    """Scales the node features by learned weights and a per-edge weight mean."""

    def __init__(self, dim: int):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, data):
        weight = data[GraphFields.EDGE_WEIGHT_FIELD].mean()
        data[NODE_FEATURES_KEY] = data[NODE_FEATURES_KEY] * self.scale * weight
        return data
'''


def test_keys_named_by_module_constants_are_those_constants(tmp_path):
    """`data[POSITIONS_KEY]`, `data[GraphFields.EDGE_WEIGHT_FIELD]` (held-out set 36: nequip's modules
    got a tensor and failed on `data[...]` with a string): the input is a dict whose display names
    the constants (the problem keeps them), holding the keys forward reads, sized for the layer."""
    problems = _harvest(tmp_path, "graph.py", CONSTANT_KEYED)
    source = problems["PositionEmbedding"].reference_source
    get_inputs = source[source.index("def get_inputs"):]
    assert "POSITIONS_KEY:" in get_inputs and "'pos'" not in get_inputs
    data = _inputs(source)
    assert list(data) == ["pos"] and data["pos"].shape[-1] == 3
    scaled = _inputs(problems["FeatureScale"].reference_source)
    assert set(scaled) == {"edge_weight", "node_features"}
    ns = _load(problems["FeatureScale"].reference_source)
    model = ns["Model"](*ns["get_init_inputs"]())
    assert scaled["node_features"].shape[-1] == model.scale.shape[0]


def test_only_constant_names_that_say_key_or_field_name_keys():
    """A lower-case name is a local (a loop over keys), an upper-case one without key/field an
    index constant: neither is read as a key; nor is an attribute of self."""
    from autotriton.harvesting.dict_inputs import KeyConstant

    def keys(body: str) -> list[str]:
        return read_keys(ast.parse(f"def forward(self, data):\n{body}").body[0], "data")

    assert keys("    return data[POSITIONS_KEY] + data[Keys.CELL_FIELD]") == ["POSITIONS_KEY", "Keys.CELL_FIELD"]
    assert all(isinstance(k, KeyConstant) and repr(k) == k for k in keys("    return data[POSITIONS_KEY]"))
    assert keys("    for k in ks:\n        y = data[k]\n    return data[AXIS] + data[self.KEY]") == []
