"""The one prompt format shared by teachers, training and evaluation.

A model is trained on exactly the prompts it is later evaluated with, so this module is the
single place that writes them and parses completions. Bump PROMPT_VERSION on any change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PROMPT_VERSION = "v1"

SYSTEM_PROMPT = (
    "You are an expert GPU kernel engineer. You rewrite PyTorch modules as Triton kernels. "
    "Think step by step, then answer with one Python code block that defines `class ModelNew(nn.Module)` "
    "with the same constructor signature as `Model`, whose forward computes everything through "
    "`@triton.jit` kernels launched as `kernel[grid](...)`. Use torch only to allocate outputs and "
    "reshape views; do not call torch operators for the computation."
)

TRITON_HINTS = (
    "Hints: use tl.program_id, tl.arange with power-of-two block sizes, masks for the edges, "
    "tl.load/tl.store, tl.dot for matrix products (accumulate in fp32), and tl.sum/tl.max for reductions."
)


def build_user_prompt(reference_source: str, instruction: str) -> str:
    """The user turn: the task in words, the PyTorch reference, and Triton hints."""
    return (
        f"{instruction.strip()}\n\n"
        "Here is the PyTorch reference:\n"
        f"```python\n{reference_source.strip()}\n```\n\n"
        f"{TRITON_HINTS}\n"
        "Write `ModelNew` in a single ```python code block, after your reasoning."
    )


def build_messages(reference_source: str, instruction: str) -> list[dict[str, str]]:
    """Chat messages (system + user) for a problem, in the OpenAI / HF chat-template form."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": build_user_prompt(reference_source, instruction)},
    ]


def format_completion(reasoning: str, code: str) -> str:
    """The assistant turn a model is trained to produce: reasoning in <think>, then the code block."""
    return f"<think>\n{reasoning.strip()}\n</think>\n\n```python\n{code.strip()}\n```"


@dataclass
class ParsedCompletion:
    reasoning: str
    code: str | None
    error: str | None  # why no code could be taken (None when code is set)


_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)
_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def parse_completion(text: str, reasoning_content: str | None = None) -> ParsedCompletion:
    """Take reasoning and code from a completion, strictly.

    The code is the last fenced block that defines `class ModelNew`; a completion with no
    fenced block, or whose blocks never define ModelNew, or whose block is cut off (no
    closing fence), yields `code=None` and an error that says which.
    """
    text = text or ""
    think = _THINK.search(text)
    reasoning = (reasoning_content or "").strip() or (think.group(1).strip() if think else "")
    body = text[think.end():] if think else text
    blocks = _FENCE.findall(body)
    if not blocks:
        if "```" in body:
            return ParsedCompletion(reasoning, None, "truncated code block (no closing ```)")
        return ParsedCompletion(reasoning, None, "no ```python code block in the output")
    with_model = [b for b in blocks if re.search(r"^class\s+ModelNew\b", b, re.MULTILINE)]
    if not with_model:
        return ParsedCompletion(reasoning, None, "no code block defines `class ModelNew`")
    if not reasoning:
        reasoning = body[: body.find("```")].strip()
    return ParsedCompletion(reasoning, with_model[-1].strip() + "\n", None)
