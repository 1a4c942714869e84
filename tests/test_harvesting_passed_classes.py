"""A class handed to a constructor and built there (issue 13, set 23: lightning-bolts' ResNetEncoder
and ResNetDecoder, `ResNetEncoder(EncoderBlock, [2, 2, 2, 2])` in the file's factory functions).
The constructor reads `block.expansion` and calls `block(self.inplanes, planes, stride)`: no stand-in
network can be built with a layer's arguments and give its channels, so the guess is the file's own
block class, which extraction keeps beside the model when the file's code passes it to the model.
The module below is written here in that style and must become a runnable problem through the
real harvest path (the validation sandbox's probe)."""

from __future__ import annotations

import ast

import torch

from tests.test_harvesting_forward_forms import _harvest, _load

RESNET = '''
class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.conv3 = nn.Conv2d(width, planes * self.expansion, 1, bias=False)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        return torch.relu(self.conv3(out) + identity)


class TinyResNet(nn.Module):
    def __init__(self, block, layers, num_classes=10):
        super().__init__()
        self.inplanes = 16
        self.stem = nn.Conv2d(3, self.inplanes, 3, 1, 1, bias=False)
        self.layer1 = self._make_layer(block, 16, layers[0])
        self.layer2 = self._make_layer(block, 32, layers[1], stride=2)
        self.fc = nn.Linear(32 * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False)
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.layer2(self.layer1(torch.relu(self.stem(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def tiny_resnet10(**kwargs):
    return TinyResNet(BasicBlock, [1, 1], **kwargs)


def tiny_resnet26(**kwargs):
    return TinyResNet(Bottleneck, [2, 2], **kwargs)
'''


def test_a_block_class_the_file_passes_to_a_model_is_kept_and_passed(tmp_path):
    problems = _harvest(tmp_path, "resnet.py", RESNET)
    source = problems["TinyResNet"].reference_source
    classes = [n.name for n in ast.parse(source).body if isinstance(n, ast.ClassDef)]
    # the first block class the factories pass is kept beside the model, and guessed for `block`
    assert "BasicBlock" in classes
    ns = _load(source)
    block, layers = ns["get_init_inputs"]()[:2]
    assert block is ns["BasicBlock"]
    model = ns["Model"](block, layers).eval()
    with torch.no_grad():
        out = model(*ns["get_inputs"]())
    assert out.shape[-1] == 10 and model.fc.in_features == 32 * block.expansion
