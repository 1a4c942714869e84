"""Kernel bodies as expressions: Inductor's single-use SSA temporaries inlined where the meaning
cannot change (distillation/inductor_kernels._inline_single_use). The eighth H200 run's SFT model
ran away in `tmpN` chains past its token limit in 82 of 192 answers; the pairs it learns from now
name only loads and values read more than once."""

from __future__ import annotations

import ast
import re

import pytest


def _inlined(src: str) -> list[str]:
    from autotriton.distillation.inductor_kernels import _inline_single_use

    fn = ast.parse(src).body[0]
    _inline_single_use(fn)
    return [ast.unparse(s) for s in fn.body]


def test_arithmetic_read_once_is_written_where_it_is_read_and_loads_stay_named():
    body = _inlined('''def k(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK):
    x0 = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = x0 < xnumel
    tmp0 = tl.load(in_ptr0 + x0, xmask)
    tmp1 = tl.load(in_ptr1 + x0, xmask)
    tmp2 = tmp0 + tmp1
    tmp3 = tl.full([1], 0, tl.int32)
    tmp4 = tl.maximum(tmp3, tmp2)
    tl.store(out_ptr0 + x0, tmp4, xmask)
''')
    assert body[2:] == ["tmp0 = tl.load(in_ptr0 + x0, xmask)", "tmp1 = tl.load(in_ptr1 + x0, xmask)",
                        "tl.store(out_ptr0 + x0, tl.maximum(tl.full([1], 0, tl.int32), tmp0 + tmp1), xmask)"]


def test_what_would_change_meaning_stays_as_it_was():
    src = '''def k(in_ptr0, out_ptr0, r0_numel, R0_BLOCK):
    tmp1 = tl.load(in_ptr0)
    tmp2 = tmp1 * 2.0
    acc = tl.zeros([R0_BLOCK], tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        acc = acc + tmp2
    tmp3 = acc * 0.5
    acc = acc + 1.0
    tl.store(out_ptr0, tmp3)
    tmp4 = tmp1 + 1.0
    tl.store(out_ptr0 + 1, tmp4 * tmp4)
    tmp5 = tmp1 - 1.0
    tmp6 = tmp1 + 2.0
    tl.store(out_ptr0 + 2, tmp5 + tmp6 + tmp5 + tmp6 + tmp5 + tmp6 + tmp5 + tmp6 + tmp5 + tmp6 + tmp5 + tmp6 + tmp5 + tmp6 + tmp5)
'''
    body = _inlined(src)
    assert "tmp2 = tmp1 * 2.0" in body  # read inside a later loop: not moved into it
    assert "tmp3 = acc * 0.5" in body  # `acc` changes before the read
    assert "tmp4 = tmp1 + 1.0" in body  # read twice
    assert "tmp5 = tmp1 - 1.0" in body and "tmp6 = tmp1 + 2.0" in body  # read many times


def test_a_line_the_inlining_would_make_too_long_keeps_its_temporary():
    long_value = " + ".join(f"tl.full([1], {i}.0, tl.float32)" for i in range(6))
    body = _inlined(f'''def k(out_ptr0, x0, xmask):
    tmp0 = {long_value}
    tl.store(out_ptr0 + x0, tmp0, xmask)
''')
    assert body[0].startswith("tmp0 = ") and body[1] == "tl.store(out_ptr0 + x0, tmp0, xmask)"


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    from inductor_helpers import capture_on_cpu, convert_all
    from test_distillation_inductor_rank_generic import PROBLEMS

    return convert_all(capture_on_cpu(PROBLEMS, tmp_path_factory.mktemp("inline"), "inline"), PROBLEMS)


def test_captured_pointwise_kernels_name_only_their_loads(converted):
    for name in ("pointwise2d", "pointwise4d"):
        code = converted[name].code
        kernel = code[code.index("@triton.jit"):code.index("class ModelNew")]
        temps = re.findall(r"^\s+(tmp\d+) = (.*)$", kernel, re.M)
        assert temps and all(value.startswith("tl.load(") for _, value in temps), kernel


def test_numbered_names_are_counted_densely_in_the_order_they_are_bound():
    from autotriton.distillation.inductor_kernels import renumber

    src = '''def k(in_ptr0, out_ptr0, xmask, rmask):
    _tmp10 = tl.full([8, 8], 0, tl.float32)
    tmp16_mean = tl.zeros([8, 8], tl.float32)
    for r in range(4):
        tmp3 = tl.load(in_ptr0 + r, rmask)
        _tmp10 = tl.where(rmask, _tmp10 + tmp3, _tmp10)
        tmp16_mean = tl.where(rmask, tmp16_mean + tmp3, tmp16_mean)
    tmp10 = tl.sum(_tmp10, 1)[:, None]
    tmp7, tmp8 = (tmp16_mean, tmp10)
    tl.store(out_ptr0, tmp10 + tmp7 + tmp8, xmask)
'''
    out = renumber(src, ("tmp",))
    assert out.splitlines()[1:] == [
        "    _tmp0 = tl.full([8, 8], 0, tl.float32)",
        "    tmp1_mean = tl.zeros([8, 8], tl.float32)",
        "    for r in range(4):",
        "        tmp2 = tl.load(in_ptr0 + r, rmask)",
        "        _tmp0 = tl.where(rmask, _tmp0 + tmp2, _tmp0)",
        "        tmp1_mean = tl.where(rmask, tmp1_mean + tmp2, tmp1_mean)",
        "    tmp0 = tl.sum(_tmp0, 1)[:, None]",  # the accumulator's result keeps its number
        "    tmp3, tmp4 = (tmp1_mean, tmp0)",
        "    tl.store(out_ptr0, tmp0 + tmp3 + tmp4, xmask)",
    ]
    # names of a stem that come from outside (a parameter, a global read before any binding) are
    # not the code's own counter: that stem is left as it is
    assert renumber("def f(buf3):\n    buf5 = buf3 + 1\n    return buf5", ("buf",)) == \
        "def f(buf3):\n    buf5 = buf3 + 1\n    return buf5"
    assert renumber("y = buf7 * 2\nbuf9 = y", ("buf",)) == "y = buf7 * 2\nbuf9 = y"
    assert renumber("buf3 = x\nbuf5 = buf3\nreturn buf5", ("buf",)) == "buf0 = x\nbuf1 = buf0\nreturn buf1"


def test_captured_kernels_and_forwards_count_their_names_from_zero_without_gaps(converted):
    for name, result in converted.items():
        code = result.code
        kernels, forward = code[:code.index("class ModelNew")], code[code.index("class ModelNew"):]
        for text, stem in ((kernels, "tmp"), (forward, "buf")):
            for body in re.split(r"\n(?=@triton\.jit)", text) if stem == "tmp" else [text]:
                numbers = {int(n) for n in re.findall(rf"\b_?{stem}(\d+)", body)}
                assert numbers == set(range(len(numbers))), f"{name}: {stem} numbers {sorted(numbers)}\n{body}"
        assert re.search(r"\btmp\d", kernels), name  # the check above saw the kernels' names
