"""Records for warehouse tests: complete source -> module -> problem -> candidate -> verdict chains."""

from __future__ import annotations

from dataclasses import dataclass, field

from autotriton.records import Candidate, Evaluation, HarvestedModule, Problem, SourceRef, Verdict, Violation


@dataclass
class Chain:
    sources: list[SourceRef] = field(default_factory=list)
    modules: list[HarvestedModule] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)


def make_chain(n: int, tag: str = "t", *, bad_every: int = 3) -> Chain:
    """n full chains; every `bad_every`-th verdict is incorrect, the rest have reward 1."""
    chain = Chain()
    for i in range(n):
        ref = SourceRef("local", f"/repo/{tag}", "", f"mod_{i}.py", "MIT", stars=i, url=None)
        module_src = f"import torch\nclass Block{tag}{i}(torch.nn.Module):\n    def forward(self, x):\n        return x * {i}\n"
        module = HarvestedModule(ref, f"Block{tag}{i}", module_src + "\n# rest of the file\n", module_src)
        problem = Problem(
            reference_source=module_src.replace(f"Block{tag}{i}", "Model") + f"\nTAG = {tag!r}\n"
            "def get_inputs():\n    return [torch.randn(4)]\n"
            "def get_init_inputs():\n    return []\n",
            name=f"block_{tag}_{i}", module_key=module.key, source_key=ref.key,
            init_spec=[], input_spec=[{"shape": [4], "dtype": "float32"}], op_tags=["mul"], licence="MIT",
        )
        cand = Candidate(
            problem_key=problem.key, code=f"import triton\nclass ModelNew:\n    k = {i}\n    tag = {tag!r}\n",
            reasoning=f"scale by {i}", instruction="write a Triton kernel", generator="replay",
            sampling={"temperature": 0.0}, usage={"prompt_tokens": 10 + i},
        )
        ok = i % bad_every != bad_every - 1
        verdict = Verdict(
            candidate_key=cand.key, problem_key=problem.key, status="correct" if ok else "incorrect",
            correct=ok, rule_ok=True, compiled=True,
            violations=[] if ok else [Violation("TRITON-NO-LAUNCH", "no kernel launched", 3)],
            trials=[{"seed": 0, "ok": ok, "max_abs_err": 0.0 if ok else 1.5}],
            triton_kernels_launched=["scale_kernel"], max_abs_err=0.0 if ok else 1.5,
            versions={"torch": "2.13.0"}, judge_config_hash="judge1", elapsed_s=0.25,
        )
        chain.sources.append(ref)
        chain.modules.append(module)
        chain.problems.append(problem)
        chain.candidates.append(cand)
        chain.verdicts.append(verdict)
    return chain


def store_chain(wh, run, chain: Chain) -> dict[str, int]:
    return {
        "modules": wh.put_modules(run, chain.modules),
        "problems": wh.put_problems(run, chain.problems),
        "candidates": wh.put_candidates(run, chain.candidates),
        "verdicts": wh.put_verdicts(run, chain.verdicts),
    }


def make_evaluation(verdicts: list[Verdict], suite: str = "demo/eval") -> Evaluation:
    passed = sum(v.correct and v.rule_ok for v in verdicts)
    return Evaluation(suite=suite, generator="model:tiny", config={"samples": 1},
                      verdict_keys=[v.key for v in verdicts], metrics={"pass@1": passed / max(len(verdicts), 1)})


DISTINCT_BODIES = [
    "torch.relu(x)", "x.sum(dim=0, keepdim=True)", "torch.softmax(x, dim=-1)", "torch.tanh(x) * 2.0 + 1.0",
    "x.cumsum(0).flip(0)", "torch.sigmoid(x) * x", "torch.nn.functional.gelu(x).mean()", "torch.clamp(x, -0.5, 0.5) ** 2",
]


def distinct_chain(n: int, tag: str = "d") -> Chain:
    """Like make_chain, but every problem computes something different, so near-duplicate
    clustering (and hence the train/validation split) sees n clusters."""
    chain = make_chain(n, tag, bad_every=n + 1)
    for i in range(n):
        body = DISTINCT_BODIES[i % len(DISTINCT_BODIES)]
        problem = chain.problems[i]
        problem.reference_source = (f"import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return {body}\n"
                                    f"\nN{i} = {i + 4}\ndef get_inputs():\n    return [torch.randn(N{i})]\n"
                                    "def get_init_inputs():\n    return []\n")
        cand = chain.candidates[i]
        cand.problem_key = problem.key
        verdict = chain.verdicts[i]
        verdict.candidate_key, verdict.problem_key = cand.key, problem.key
    return chain
