"""Hugging Face style models (super-image's 17 upscalers, held-out set 28): the constructor takes a
configuration that must be an instance of the class the model names as `config_class`; a namespace
of guessed fields is refused ("should be an instance of class `PretrainedConfig`")."""

from __future__ import annotations

from autotriton.harvesting import HarvestConfig, harvest_local

from tests.test_harvesting_synthesis import HEADER

HF_MODELS = '''
class PretrainedConfig:
    """The configuration base: keyword arguments kept as attributes."""

    def __init__(self, **kwargs):
        self.name_or_path = kwargs.pop("name_or_path", "")
        for key, value in kwargs.items():
            setattr(self, key, value)


class PreTrainedModel(nn.Module):
    config_class = None

    def __init__(self, config, *inputs, **kwargs):
        super().__init__()
        if not isinstance(config, PretrainedConfig):
            raise ValueError(f"Parameter config in `{self.__class__.__name__}(config)` should be an instance of class "
                             "`PretrainedConfig`.")
        self.config = config


class UpscaleConfig(PretrainedConfig):
    def __init__(self, scale: int = None, n_feats=16, n_colors=3, res_scale=1.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale
        self.n_feats = n_feats
        self.n_colors = n_colors
        self.res_scale = res_scale


class UpscalePreTrainedModel(PreTrainedModel):
    config_class = UpscaleConfig


class UpscaleModel(UpscalePreTrainedModel):
    """EDSR-style super-resolution: a head, a residual body, a pixel-shuffle upsampler."""

    def __init__(self, args):
        super().__init__(args)
        self.head = nn.Conv2d(args.n_colors, args.n_feats, 3, padding=1)
        self.body = nn.Sequential(nn.Conv2d(args.n_feats, args.n_feats, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(args.n_feats, args.n_feats, 3, padding=1))
        self.tail = nn.Sequential(nn.Conv2d(args.n_feats, args.n_feats * args.scale ** 2, 3, padding=1),
                                  nn.PixelShuffle(args.scale), nn.Conv2d(args.n_feats, args.n_colors, 3, padding=1))
        self.res_scale = args.res_scale

    def forward(self, x):
        x = self.head(x)
        return self.tail(x + self.body(x) * self.res_scale)
'''


def test_a_model_naming_its_config_class_is_built_with_an_instance_of_it(tmp_path):
    (tmp_path / "upscale.py").write_text(HEADER + HF_MODELS)
    result = harvest_local(tmp_path, HarvestConfig(incremental=False))
    problems = {p.name: p for p in result.problems}
    model = problems["UpscaleModel"]
    assert (model.status, model.reject_reason) == ("runnable", None), result.details.get(model.key)
    # its defaults kept, the integer left at None given one
    assert model.init_spec[0] == {"expr": "UpscaleConfig(scale=2)", "kind": "config", "fields": {"scale": 2}}
    assert "return [UpscaleConfig(scale=2)]" in model.reference_source


def test_a_config_class_of_a_package_is_built_with_its_defaults():
    import ast

    from autotriton.harvesting.argument_guesses import config_class_argument

    source = ("class Encoder(PreTrainedModel):\n    config_class = transformers.BertConfig\n\n"
              "class Model(Encoder):\n    def __init__(self, config):\n        super().__init__(config)\n")
    classes = {n.name: n for n in ast.parse(source).body if isinstance(n, ast.ClassDef)}
    assert config_class_argument(classes, 32) == ("transformers.BertConfig()", {"expr": "transformers.BertConfig()",
                                                                                "kind": "config", "fields": {}})
    # a base that names no configuration (PreTrainedModel's own `config_class = None`): nothing to build
    classes = {n.name: n for n in ast.parse(source.replace("transformers.BertConfig", "None")).body
               if isinstance(n, ast.ClassDef)}
    assert config_class_argument(classes, 32) is None
