"""Can a completion cap hold a kernel at all?

A GRPO run whose `max_completion_length`, or an evaluation whose `max_new_tokens`, is shorter than
every kernel its data holds cuts every completion off before its code block closes: no completion
parses, every reward is 0, the reward std and the loss are 0, and nothing is learned or measured
(the demo once ran so: 128 tokens against validated kernels of 250+). This module measures the
shortest validated kernel with the run's own tokenizer, as the fenced block a completion must
hold, and says whether the cap fits it. The callers refuse a GRPO run that cannot learn and warn
loudly about an evaluation that cannot score.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass


class CapError(ValueError):
    """A run's completion cap cannot hold the shortest kernel of its data; the message says what to set."""


def fenced(code: str) -> str:
    """The least a completion holds to carry `code`: one ```python block (what parse_completion takes)."""
    return f"```python\n{code.strip()}\n```"


@dataclass(frozen=True)
class CapCheck:
    setting: str  # the config key of the cap, e.g. "training.max_completion_length"
    cap: int
    shortest: int | None  # tokens of the shortest validated kernel; None when the data has none
    shortest_name: str = ""  # its problem's name
    measured: int = 0  # kernels measured (the shortest by characters, at most `measure` of them)
    fitting: int = 0  # of those, how many fit under the cap
    tokenizer: str = ""

    @property
    def holds(self) -> bool:
        return self.shortest is None or self.cap >= self.shortest

    @property
    def suggestion(self) -> int:
        """A cap with room for the shortest kernel and some reasoning: 1.5x, rounded up to 64."""
        return 64 * math.ceil((self.shortest or self.cap) * 1.5 / 64)

    def message(self) -> str:
        if self.shortest is None:
            return f"{self.setting} = {self.cap}: no validated kernel to measure it against."
        if not self.holds:
            return (f"{self.setting} = {self.cap} tokens cannot hold a kernel: the shortest validated kernel of this run's data "
                    f"({self.shortest_name}) is {self.shortest} tokens as a ```python block with {self.tokenizer or 'the model'}'s "
                    f"tokenizer, so every completion would be cut off before its code block closes (reward 0 for all, "
                    f"reward std 0, nothing to learn). Raise it, e.g. --set {self.setting}={self.suggestion}.")
        return (f"{self.setting} = {self.cap} tokens holds {self.fitting} of the {self.measured} shortest validated kernels "
                f"(shortest: {self.shortest_name}, {self.shortest} tokens).")

    def to_dict(self) -> dict:
        return {**asdict(self), "holds": self.holds}


def check_cap(count_tokens: Callable[[str], int], kernels: Iterable[tuple[str, str]], cap: int, setting: str, *,
              tokenizer: str = "", measure: int = 256) -> CapCheck:
    """Measure (name, code) kernels with `count_tokens` against `cap`. Only the `measure` shortest by
    characters are tokenized: the shortest in tokens is among them, and a large warehouse costs no more."""
    pairs = sorted(((name, code) for name, code in kernels if code and code.strip()), key=lambda p: len(p[1]))[:measure]
    if not pairs:
        return CapCheck(setting, int(cap), None, tokenizer=tokenizer)
    counted = [(count_tokens(fenced(code)), name) for name, code in pairs]
    shortest, name = min(counted)
    return CapCheck(setting, int(cap), int(shortest), name, len(counted), sum(n <= cap for n, _ in counted), tokenizer)


def require(check: CapCheck) -> CapCheck:
    """`check`, or CapError when its cap cannot hold the shortest kernel."""
    if not check.holds:
        raise CapError(check.message())
    return check
