"""Constructor and input guesses for module shapes held-out set 18 failed on (snntorch, deepinv),
written here: a subclass handing *args to its own package's base class, a module-typed parameter
under a class-like name, a wrapped network called with more than its input, and a second input
that meets a layer's output rather than the first input."""

from __future__ import annotations

from autotriton.harvesting.input_repair import repair_attempts
from autotriton.harvesting.synthesis import Attempt, synthesize

from test_harvesting_synthesis import HEADER, assert_all_runnable


LEAKY_FAMILY = '''
class Neuron(nn.Module):
    def __init__(self, threshold=1.0, learn_threshold=False):
        super().__init__()
        self.threshold = nn.Parameter(torch.tensor(threshold), requires_grad=learn_threshold)

    def forward(self, x):
        return torch.relu(x - self.threshold)


class Leaky(Neuron):
    def __init__(self, beta, threshold=1.0, learn_beta=False):
        super().__init__(threshold)
        self.beta = nn.Parameter(torch.tensor(beta), requires_grad=learn_beta)

    def forward(self, x):
        return torch.sigmoid(self.beta * x - self.threshold)


class DeltaLeaky(Leaky):
    def __init__(self, delta_threshold=1.0, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.delta_threshold = delta_threshold

    def forward(self, x):
        return torch.sigmoid(self.beta * x.abs() - self.delta_threshold)
'''


def test_a_subclass_handing_args_to_a_base_of_its_own_file_takes_the_bases_parameters(tmp_path):
    """`def __init__(self, delta_threshold=1.0, *args, **kwargs): super().__init__(*args, **kwargs)`
    over a base of the same package whose `beta` is required (snntorch's DeltaLeaky): the guess
    passes its own defaulted parameter, then the base's required one (it got nothing and failed
    with "Leaky.__init__() missing 1 required positional argument: 'beta'")."""
    attempt = synthesize(HEADER + LEAKY_FAMILY.replace("class DeltaLeaky(Leaky)", "class Model(Leaky)"))[0]
    assert attempt.init_code[:2] == ["1.0", "1.0"], attempt.init_code  # delta_threshold's default, then beta
    assert [s["name"] for s in attempt.init_spec[:2]] == ["delta_threshold", "beta"], attempt.init_spec
    assert_all_runnable(tmp_path, "leaky.py", LEAKY_FAMILY, 3)
    # a base parameter the call passes by keyword ends what *args can fill (deepinv's SDEs:
    # `super().__init__(sigma_t=sigma_t, *args, **kwargs)`): positional ones up to it only
    keyword = LEAKY_FAMILY.replace("class DeltaLeaky(Leaky)", "class Model(Leaky)").replace(
        "super().__init__(*args, **kwargs)", "super().__init__(*args, gain=2.0, **kwargs)").replace(
        "def __init__(self, beta, threshold=1.0, learn_beta=False)", "def __init__(self, beta, gain, threshold=1.0, learn_beta=False)")
    assert [s["name"] for s in synthesize(HEADER + keyword)[0].init_spec] == ["delta_threshold", "beta"]


CHANNEL_ATTENTION_BLOCK = '''
class Block(nn.Module):
    def __init__(self, n_feat: int, kernel_size: int, act: nn.Module):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(n_feat, n_feat, kernel_size, padding=kernel_size // 2), act,
                                  nn.Conv2d(n_feat, n_feat, kernel_size, padding=kernel_size // 2))

    def forward(self, x):
        return self.body(x) + x
'''


def test_a_module_annotation_asks_for_a_built_module_whatever_the_name(tmp_path):
    """`act: nn.Module` handed to nn.Sequential (deepinv's restoration blocks): a name like `act`
    handed on usually holds a class to build (`act_layer=nn.GELU`), but the annotation says an
    instance; nn.Sequential refused the class ("ReLU is not a Module subclass")."""
    attempt = synthesize(HEADER + CHANNEL_ATTENTION_BLOCK.replace("class Block", "class Model"))[0]
    assert attempt.init_code[2] == "torch.nn.ReLU()", attempt.init_code
    # without the annotation the name still reads as a class to build, as before
    plain = synthesize(HEADER + CHANNEL_ATTENTION_BLOCK.replace("class Block", "class Model").replace(
        "act: nn.Module", "act_layer").replace(", act,", ", act_layer(),"))[0]
    assert plain.init_code[2] == "torch.nn.ReLU", plain.init_code
    assert_all_runnable(tmp_path, "block.py", CHANNEL_ATTENTION_BLOCK, 1)


DISTILLATION_WRAPPER = '''
class StudentGrad(nn.Module):
    def __init__(self, denoiser):
        super().__init__()
        self.model = denoiser

    def forward(self, x, sigma):
        return self.model(x, sigma)
'''


def test_a_held_module_called_with_two_arguments_gets_the_stand_in_whatever_its_name(tmp_path):
    """`self.model = denoiser; self.model(x, sigma)`: the name says nothing a guess knows (it was
    a size, then nn.GELU, which takes one argument), the call says a network of two arguments."""
    attempt = synthesize(HEADER + DISTILLATION_WRAPPER.replace("class StudentGrad", "class Model"))[0]
    assert attempt.init_code == ["WrappedNetwork()"], attempt.init_code
    assert_all_runnable(tmp_path, "student.py", DISTILLATION_WRAPPER, 1)


SUPERVISED_ATTENTION = '''
class SAM(nn.Module):
    def __init__(self, n_feat: int, kernel_size: int):
        super().__init__()
        self.conv1 = nn.Conv2d(n_feat, n_feat, kernel_size, padding=kernel_size // 2)
        self.conv2 = nn.Conv2d(n_feat, 3, kernel_size, padding=kernel_size // 2)
        self.conv3 = nn.Conv2d(3, n_feat, kernel_size, padding=kernel_size // 2)

    def forward(self, x, x_img):
        x1 = self.conv1(x)
        img = self.conv2(x) + x_img
        x2 = torch.sigmoid(self.conv3(img))
        return x1 * x2 + x, img
'''


def test_a_broadcast_error_also_reshapes_each_input_alone(tmp_path):
    """`img = self.conv2(x) + x_img` (a 3-channel image added to a layer's output; deepinv's
    supervised attention): both inputs were guessed (2, 16, 8, 8) and the broadcast repair
    reshaped both, which breaks conv1; the repair now also offers each input reshaped alone."""
    spec = {"kind": "tensor", "shape": [2, 16, 8, 8], "dtype": "float32"}
    attempt = Attempt(["16", "3"], [{"name": "n_feat", "value": 16}, {"name": "kernel_size", "value": 3}],
                      ["torch.randn(2, 16, 8, 8)"] * 2, [spec, spec])
    message = "RuntimeError: The size of tensor a (3) must match the size of tensor b (16) at non-singleton dimension 1"
    both, second, first = repair_attempts(attempt, message)[:3]
    assert [s["shape"][1] for s in both.input_spec] == [3, 3]
    assert [s["shape"][1] for s in second.input_spec] == [16, 3]  # the input added in, first
    assert [s["shape"][1] for s in first.input_spec] == [3, 16]
    assert_all_runnable(tmp_path, "sam.py", SUPERVISED_ATTENTION, 1)


INVERTIBLE_BLOCKS = '''
class Invertible(nn.Module):
    def __init__(self, dims_in, dims_c=None):
        super().__init__()
        self.dims_in = list(dims_in)
        self.dims_c = list(dims_c or [])


class ChannelScale(Invertible):
    def __init__(self, dims_in, dims_c=None, scale=0.5):
        super().__init__(dims_in, dims_c)
        self.channels = dims_in[0][0]
        self.weight = nn.Parameter(torch.ones(self.channels, 1, 1) * scale)

    def forward(self, x):
        return x * self.weight


class Coupling(Invertible):
    def __init__(self, dims_in, dims_c=None, subnet_constructor=None):
        super().__init__(dims_in, dims_c)
        self.half = dims_in[0][0] // 2
        self.subnet = subnet_constructor(self.half, self.half)

    def forward(self, x):
        a, b = x[:, :self.half], x[:, self.half:]
        return torch.cat([a, b * torch.sigmoid(self.subnet(a))], dim=1)
'''


def test_a_list_of_input_shapes_read_through_the_base_constructor_gets_one_sample_shape(tmp_path):
    """FrEIA's invertible blocks take `dims_in`, a list of input shapes, hand it to the base's
    `super().__init__(dims_in, dims_c)` (which copies it: `list(dims_in)`) and read
    `dims_in[0][0]` (channels): followed through the base constructor and the nested index, the
    guess is one input of one sample's shape, [(32, 8, 8)], the first input guess's (it was 32:
    "'int' object is not iterable"). A None-default factory __init__ calls (`subnet_constructor`)
    is given, as a class that takes any arguments."""
    from autotriton.harvesting import HarvestConfig, harvest_local

    scale = synthesize(HEADER + INVERTIBLE_BLOCKS.replace("class ChannelScale", "class Model"))[0]
    assert scale.init_code[0] == "[(32, 8, 8)]" and scale.input_code == ["torch.randn(2, 32, 8, 8)"], scale
    coupling = synthesize(HEADER + INVERTIBLE_BLOCKS.replace("class Coupling", "class Model"))[0]
    assert coupling.init_code == ["[(32, 8, 8)]", "None", "torch.nn.Identity"], coupling.init_code
    (tmp_path / "invertible.py").write_text(HEADER + INVERTIBLE_BLOCKS)
    result = harvest_local(tmp_path, HarvestConfig(incremental=False))
    status = {p.name: (p.status, p.reject_reason) for p in result.problems}
    assert status["ChannelScale"] == status["Coupling"] == ("runnable", None), status
    assert status["Invertible"] == ("rejected", "no_forward"), status
