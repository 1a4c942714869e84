"""Training rows from records: the SFT set, the RL prompt set, their split and their sampling.

- `build_sft_rows(pairs)`: one conversational prompt/completion row per validated pair; trl's
  SFTTrainer applies the model's own chat template to it and trains on the completion only.
- `build_rl_rows(problems, pairs, stats)`: GRPO prompts with their reference, AutoTriton's mix
  (problems no teacher solved plus a share of the SFT distribution), sampled for diversity.
- `problem_split(problems, pairs)`: each problem's near-duplicate cluster (MinHash over the
  reference source; generated problems by their code up to literals) and train/validation split, computed once over one universe of problems.
  The exports pass the same `ProblemSplit` to both builders, so a problem, and every near-copy
  of it, is in the same split of the SFT and the RL set: nothing held out of one is trained on
  in the other (training/exports.py).

Plain records in, plain dicts out: the warehouse writes them to Parquet (`wh.export_parquet`).
A prompt states the problem's stored instruction (`Problem.instruction`, autotriton/describe.py),
so training and evaluation phrase a problem alike.
"""

from __future__ import annotations

import ast
import hashlib
import io
import math
import random
import re
import tokenize
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autotriton.describe import default_instruction, problem_instruction  # noqa: F401 (default_instruction: training's public name)
from autotriton.prompting import PROMPT_VERSION, build_messages, format_completion
from autotriton.records import Candidate, Problem, Verdict

# --------------------------------------------------------------------------------------------
# Op categories: Problem.op_tags, or a light AST pass over the reference

# Names seen in a reference (torch.* / F.* calls, nn.* modules, tensor methods) -> category.
_CATEGORY_OF: dict[str, str] = {}
for _cat, _names in {
    "matmul": "matmul mm bmm addmm baddbmm einsum linear Linear Bilinear matrix_power tensordot outer",
    "conv": "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d Conv1d Conv2d Conv3d "
    "ConvTranspose1d ConvTranspose2d ConvTranspose3d unfold fold Unfold Fold",
    "attention": "scaled_dot_product_attention MultiheadAttention",
    "normalization": "layer_norm batch_norm group_norm instance_norm rms_norm normalize LayerNorm BatchNorm1d "
    "BatchNorm2d BatchNorm3d GroupNorm InstanceNorm1d InstanceNorm2d InstanceNorm3d RMSNorm LocalResponseNorm",
    "pooling": "max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d adaptive_avg_pool1d "
    "adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool2d MaxPool1d MaxPool2d MaxPool3d AvgPool1d "
    "AvgPool2d AvgPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool2d",
    "softmax": "softmax log_softmax softmin Softmax LogSoftmax Softmin logsumexp",
    "activation": "relu relu6 leaky_relu elu selu celu gelu silu mish sigmoid tanh hardtanh hardsigmoid "
    "hardswish softplus softsign tanhshrink threshold glu ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish "
    "Sigmoid Tanh Hardtanh Hardsigmoid Hardswish Softplus Softsign GLU PReLU prelu",
    "reduction": "sum mean amax amin argmax argmin prod std var norm cumsum cumprod cummax cummin max min "
    "all any median",
    "loss": "cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss huber_loss kl_div binary_cross_entropy "
    "binary_cross_entropy_with_logits triplet_margin_loss hinge_embedding_loss cosine_embedding_loss "
    "margin_ranking_loss CrossEntropyLoss MSELoss L1Loss SmoothL1Loss HuberLoss KLDivLoss BCELoss "
    "BCEWithLogitsLoss TripletMarginLoss cosine_similarity",
    "elementwise": "add sub mul div pow exp log sqrt rsqrt abs neg clamp clip where maximum minimum sin cos "
    "erf reciprocal sign floor ceil round addcmul addcdiv lerp",
    "indexing": "gather scatter index_select masked_fill embedding Embedding take cat stack split chunk "
    "transpose permute flip roll tril triu diag sort topk",
}.items():
    for _name in _names.split():
        _CATEGORY_OF[_name] = _cat

# Operator symbols count as elementwise (x + y) or matmul (x @ y).
_BINOP_CATEGORY = {ast.MatMult: "matmul", ast.Add: "elementwise", ast.Sub: "elementwise",
                   ast.Mult: "elementwise", ast.Div: "elementwise", ast.Pow: "elementwise"}


def infer_op_tags(reference_source: str) -> list[str]:
    """Op categories a reference uses, from the calls and operators in its source (sorted).

    A light AST pass: `torch.matmul(...)`, `F.relu(...)`, `nn.Conv2d(...)`, `x.sum(...)` and
    `a @ b` are recognised by name; anything unrecognised is ignored. A source that does not
    parse yields []. Only `Model` (and helpers) are read; `get_inputs` builders are skipped
    because `torch.randn` says nothing about the computation.
    """
    try:
        tree = ast.parse(reference_source)
    except (SyntaxError, ValueError):
        return []
    tags: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in ("get_inputs", "get_init_inputs"):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                func = sub.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
                if name and name in _CATEGORY_OF:
                    tags.add(_CATEGORY_OF[name])
            elif isinstance(sub, ast.BinOp) and type(sub.op) in _BINOP_CATEGORY:
                tags.add(_BINOP_CATEGORY[type(sub.op)])
    return sorted(tags)


def problem_tags(problem: Problem) -> list[str]:
    """The problem's own op tags, or inferred ones; ["other"] when neither says anything."""
    return sorted(problem.op_tags) if problem.op_tags else (infer_op_tags(problem.reference_source) or ["other"])


# --------------------------------------------------------------------------------------------
# Near-duplicate clusters (MinHash + LSH over the reference source)


def _tokens(source: str) -> list[str]:
    """The source's tokens with comments and layout dropped and literals folded (`<num>`, `<str>`)."""
    tokens: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                            tokenize.ENDMARKER):
                continue
            if tok.type == tokenize.NUMBER:
                tokens.append("<num>")
            elif tok.type == tokenize.STRING:
                tokens.append("<str>")
            else:
                tokens.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = re.findall(r"\w+|[^\w\s]", source)
    return tokens


def _shingles(source: str, k: int = 5) -> set[bytes]:
    """Token k-grams of the source with names kept and literals folded (shapes differ, code alike)."""
    tokens = _tokens(source)
    if len(tokens) < k:
        return {" ".join(tokens).encode()}
    return {" ".join(tokens[i:i + k]).encode() for i in range(len(tokens) - k + 1)}


def literal_signature(source: str) -> str:
    """The source up to its literals: two sources with one signature differ only in numbers and
    strings (sizes, constants, docstrings)."""
    return hashlib.sha256(" ".join(_tokens(source)).encode()).hexdigest()


def near_duplicate_clusters(sources: Mapping[str, str], threshold: float = 0.8, num_perm: int = 128,
                            seed: int = 1, generated: Collection[str] = ()) -> dict[str, str]:
    """Map each key to its cluster id: keys whose sources' estimated Jaccard similarity is at
    least `threshold` (MinHash LSH, transitively) share a cluster. The cluster id is the
    smallest key in it, so it is stable whatever the order of `sources`.

    `generated`: keys of problems a generator wrote from one template (harvest's synthetic
    source). Their shared template is the generator's, not copied code: MinHash would chain a
    whole family into one cluster (every short op chain is within the threshold of another), and
    a held-out split made of whole clusters could then hold none of the family. Two generated
    problems are near-duplicates when they are the same code up to literals (the same ops in the
    same order, other sizes and constants); a generated problem and a harvested one still are
    when MinHash says so.
    """
    from datasketch import MinHash, MinHashLSH

    keys = sorted(sources)
    parent = {k: k for k in keys}
    made = set(generated)

    def find(k: str) -> str:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def union(a: str, b: str) -> None:
        a, b = find(a), find(b)
        if a != b:
            parent[max(a, b)] = min(a, b)

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    same_code: dict[str, str] = {}
    for key in keys:
        if key in made:
            union(key, same_code.setdefault(literal_signature(sources[key]), key))
        mh = MinHash(num_perm=num_perm, seed=seed)
        mh.update_batch(list(_shingles(sources[key])))
        for other in lsh.query(mh):
            if not (key in made and other in made):
                union(key, other)
        lsh.insert(key, mh)
    return {k: find(k) for k in keys}


def assign_splits(clusters: Mapping[str, str], val_fraction: float, seed: int = 0) -> dict[str, str]:
    """Map each key to "train" or "validation", whole clusters at a time.

    Clusters are visited in a seeded hash order and held out while they fit: a cluster is taken
    when the held-out count stays within 1.5x the target (`val_fraction` of the keys, rounded
    up), so one big cluster of near-copies cannot swallow the validation set. With two or more
    clusters and a fraction above 0, at least one cluster (the smallest) is held out and at
    least one stays in train. A cluster, hence a problem, never straddles the split.
    """
    members: dict[str, list[str]] = defaultdict(list)
    for key, cluster in clusters.items():
        members[cluster].append(key)
    order = sorted(members, key=lambda c: hashlib.sha256(f"{seed}:{c}".encode()).hexdigest())
    target = val_fraction * len(clusters)
    limit = max(1, math.ceil(target * 1.5))
    held: set[str] = set()
    count = 0
    if val_fraction > 0 and len(order) >= 2:
        for cluster in order:
            if count >= target:
                break
            size = len(members[cluster])
            if count + size <= limit and len(held) < len(order) - 1:
                held.add(cluster)
                count += size
        if not held:
            held.add(min(order, key=lambda c: len(members[c])))
    return {key: ("validation" if clusters[key] in held else "train") for key in clusters}


@dataclass(frozen=True)
class ProblemSplit:
    """Per problem key: its near-duplicate cluster id and its split ("train"/"validation")."""

    cluster: dict[str, str]
    split: dict[str, str]

    def of(self, problem: Problem, builder: str) -> tuple[str, str]:
        """(cluster, split) of a problem; one outside the universe is a caller's error."""
        if problem.key not in self.split:
            raise ValueError(f"{builder}: problem {problem.key} ({problem.name}) is not in the split it was given; "
                             "build the split with problem_split over every problem the rows use.")
        return self.cluster[problem.key], self.split[problem.key]


def problem_split(problems: Iterable[Problem], pairs: Iterable[tuple[Problem, Candidate, Verdict]] = (), *,
                  val_fraction: float = 0.1, dedup_threshold: float = 0.8, num_perm: int = 128,
                  seed: int = 0, generated: Collection[str] = ()) -> ProblemSplit:
    """Clusters and splits over one universe: the runnable `problems` plus the problems of `pairs`
    (`generated`: the keys of generated ones, see near_duplicate_clusters).

    Computed over the union (not per export) because the split depends on who else is in the
    universe: clusters merge transitively and `assign_splits` sizes the held-out set by count.
    """
    sources = {p.key: p.reference_source for p in problems if p.status == "runnable"}
    sources.update({p.key: p.reference_source for p, _, _ in pairs})
    clusters = near_duplicate_clusters(sources, dedup_threshold, num_perm, generated=generated)
    return ProblemSplit(clusters, assign_splits(clusters, val_fraction, seed))


# --------------------------------------------------------------------------------------------
# SFT rows


def _completion_message(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def build_sft_rows(pairs: Iterable[tuple[Problem, Candidate, Verdict]], *, split: ProblemSplit | None = None,
                   val_fraction: float = 0.1, dedup_threshold: float = 0.8, num_perm: int = 128,
                   seed: int = 0) -> list[dict[str, Any]]:
    """One conversational prompt/completion row per validated pair.

    prompt = `build_messages(reference, problem_instruction(problem))` (system + user: the prompt
    evaluation and RL rows state for the problem), completion = one assistant
    message `format_completion(reasoning, code)`: trl renders both with the model's own chat
    template and trains on the completion only. Pairs whose verdict is not reward-1 (correct
    and rule-abiding) are refused: the warehouse's `validated_pairs()` gives only those.
    Rows carry `split` ("train"/"validation", by near-duplicate cluster of the problem),
    `cluster`, keys for lineage, the problem's op tags, its reference and licence (so the
    validation rows can be evaluated as a suite). Duplicate candidates are kept once.
    `split`: the shared `problem_split`; without one the split is computed over the pairs'
    problems alone (val_fraction, dedup_threshold, num_perm, seed apply only then).
    """
    pairs = list(pairs)
    for problem, candidate, verdict in pairs:
        if not (verdict.correct and verdict.rule_ok):
            raise ValueError(
                f"build_sft_rows: candidate {candidate.key} of problem {problem.key} ({problem.name}) has verdict "
                f"status {verdict.status!r} (correct={verdict.correct}, rule_ok={verdict.rule_ok}); only reward-1 "
                "pairs make SFT rows: pass wh.validated_pairs()."
            )
        if verdict.candidate_key != candidate.key:
            raise ValueError(f"build_sft_rows: verdict {verdict.key} judges candidate {verdict.candidate_key}, "
                             f"not the candidate {candidate.key} it is paired with.")
    if split is None:
        split = problem_split((), pairs, val_fraction=val_fraction, dedup_threshold=dedup_threshold,
                              num_perm=num_perm, seed=seed)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for problem, candidate, verdict in sorted(pairs, key=lambda t: (t[0].key, t[1].key)):
        if candidate.key in seen:
            continue
        seen.add(candidate.key)
        # The prompt states the problem's own instruction, as RL rows and evaluation prompts do (a
        # teacher's traced wording, "... and returns [16, 1] float32", would be a prompt the model
        # never sees again once trained).
        instruction = problem_instruction(problem)
        cluster, row_split = split.of(problem, "build_sft_rows")
        rows.append({
            "prompt": build_messages(problem.reference_source, instruction),
            "completion": _completion_message(format_completion(candidate.reasoning, candidate.code)),
            "problem_key": problem.key,
            "candidate_key": candidate.key,
            "verdict_key": verdict.key,
            "name": problem.name,
            "op_tags": problem_tags(problem),
            "generator": candidate.generator,
            "reference": problem.reference_source,
            "licence": problem.licence,
            "cluster": cluster,
            "split": row_split,
            "prompt_version": PROMPT_VERSION,
        })
    return rows


# --------------------------------------------------------------------------------------------
# Pass rates (difficulty)


@dataclass
class PassStats:
    """How often teachers and the model solved a problem (reward 1 = correct and rule-abiding)."""

    teacher_attempts: int = 0
    teacher_passes: int = 0
    model_attempts: int = 0
    model_passes: int = 0

    @property
    def attempts(self) -> int:
        return self.teacher_attempts + self.model_attempts

    @property
    def pass_rate(self) -> float | None:
        """Pooled pass rate, None when nobody tried."""
        return (self.teacher_passes + self.model_passes) / self.attempts if self.attempts else None

    @property
    def teacher_solved(self) -> bool:
        return self.teacher_passes > 0


def pass_stats(candidates: Iterable[Candidate], verdicts: Iterable[Verdict]) -> dict[str, PassStats]:
    """Per problem key: attempts and passes by teachers and by models (generator "model:...")."""
    by_candidate: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        by_candidate[v.candidate_key].append(v)
    stats: dict[str, PassStats] = defaultdict(PassStats)
    for c in candidates:
        judged = by_candidate.get(c.key)
        if not judged:
            continue
        passed = any(v.correct and v.rule_ok for v in judged)
        s = stats[c.problem_key]
        if c.generator.startswith("model"):
            s.model_attempts += 1
            s.model_passes += int(passed)
        else:
            s.teacher_attempts += 1
            s.teacher_passes += int(passed)
    return dict(stats)


def difficulty_weight(stats: PassStats | None, *, unsolved_weight: float = 0.5, floor: float = 0.2) -> float:
    """Sampling weight from difficulty: 4p(1-p) (most GRPO signal at p=0.5) floored; a problem
    nobody tried weighs 1 (unknown is worth exploring); tried and never solved: `unsolved_weight`."""
    if stats is None or stats.pass_rate is None:
        return 1.0
    p = stats.pass_rate
    if p == 0.0:
        return unsolved_weight
    return floor + (1.0 - floor) * 4.0 * p * (1.0 - p)


# --------------------------------------------------------------------------------------------
# Diversity sampling


@dataclass
class SampleItem:
    key: str
    category: str
    cluster: str
    weight: float
    extra: dict[str, Any] = field(default_factory=dict)


def primary_category(tags: Sequence[str], tag_counts: Mapping[str, int]) -> str:
    """The rarest of a problem's tags: rare ops then get their share of the prompts."""
    return min(tags, key=lambda t: (tag_counts.get(t, 0), t)) if tags else "other"


def diversity_sample(items: Sequence[SampleItem], n: int, seed: int = 0) -> list[SampleItem]:
    """Pick `n` items (no repeats), balanced across categories and near-duplicate clusters.

    Round-robin over categories (seeded order); inside a category, round-robin over clusters,
    so a second member of a cluster is picked only once every cluster of the category has
    given one; inside a cluster, items come in weighted-random order (Efraimidis-Spirakis keys
    u^(1/w)), so the difficulty weight decides who goes first without excluding anyone.
    A category that runs out drops out of the rotation.
    """
    rng = random.Random(seed)
    ordered: dict[str, dict[str, list[SampleItem]]] = defaultdict(lambda: defaultdict(list))
    keyed = sorted(items, key=lambda it: it.key)
    es_key = {it.key: (rng.random() ** (1.0 / max(it.weight, 1e-9))) for it in keyed}
    for it in keyed:
        ordered[it.category][it.cluster].append(it)
    for clusters in ordered.values():
        for members in clusters.values():
            members.sort(key=lambda it: -es_key[it.key])
    # Per category: clusters in order of their best member, then cycled.
    queues: dict[str, list[SampleItem]] = {}
    for cat, clusters in ordered.items():
        cluster_lists = sorted(clusters.values(), key=lambda ms: -es_key[ms[0].key])
        seq: list[SampleItem] = []
        depth = 0
        while any(depth < len(ms) for ms in cluster_lists):
            seq.extend(ms[depth] for ms in cluster_lists if depth < len(ms))
            depth += 1
        queues[cat] = seq
    cats = sorted(queues)
    rng.shuffle(cats)
    picked: list[SampleItem] = []
    pos = {c: 0 for c in cats}
    while len(picked) < n and cats:
        for cat in list(cats):
            if len(picked) >= n:
                break
            if pos[cat] >= len(queues[cat]):
                cats.remove(cat)
                continue
            picked.append(queues[cat][pos[cat]])
            pos[cat] += 1
    return picked


# --------------------------------------------------------------------------------------------
# RL rows


def build_rl_rows(problems: Iterable[Problem], pairs: Iterable[tuple[Problem, Candidate, Verdict]] = (),
                  stats: Mapping[str, PassStats] | None = None, *, n_prompts: int = 0, sft_share: float = 0.3,
                  unsolved_weight: float = 0.5, difficulty_floor: float = 0.2, split: ProblemSplit | None = None,
                  val_fraction: float = 0.1, dedup_threshold: float = 0.8, num_perm: int = 128,
                  seed: int = 0) -> list[dict[str, Any]]:
    """GRPO prompts: AutoTriton's mix, sampled for diversity, split by near-duplicate cluster.

    `problems` are the candidates for RL (runnable problems); `pairs` are the validated pairs
    (their problems form the SFT distribution); `stats` are pass rates (`pass_stats`). The mix:
    `1 - sft_share` of the prompts from problems no teacher solved, `sft_share` from problems
    that are in the SFT set (SFT problems fill in when unsolved ones run short); `n_prompts` = 0
    takes every eligible problem once, unsolved and SFT alike (training.rl_prompts' doc). Each
    side is drawn with `diversity_sample`: balanced across op categories (rarest tag) and
    clusters, ordered by difficulty weight. A row holds the chat
    prompt, the reference (the reward function's input), licence, keys, tags, cluster,
    difficulty, origin ("unsolved" / "sft") and split. `split`: the shared `problem_split`;
    without one it is computed over these problems alone (val_fraction, dedup_threshold,
    num_perm apply only then; `seed` also seeds the sampling).
    """
    stats = stats or {}
    problems = {p.key: p for p in problems if p.status == "runnable"}
    sft_keys = {p.key for p, _, _ in pairs}
    for p, _, _ in pairs:
        problems.setdefault(p.key, p)
    if not problems:
        return []
    if split is None:
        split = problem_split(problems.values(), pairs, val_fraction=val_fraction, dedup_threshold=dedup_threshold,
                              num_perm=num_perm, seed=seed)
    for p in problems.values():
        split.of(p, "build_rl_rows")  # every problem must be in the universe, before any sampling
    clusters, splits = split.cluster, split.split
    tags = {k: problem_tags(p) for k, p in problems.items()}
    tag_counts = Counter(t for ts in tags.values() for t in ts)

    def item(key: str) -> SampleItem:
        w = difficulty_weight(stats.get(key), unsolved_weight=unsolved_weight, floor=difficulty_floor)
        return SampleItem(key, primary_category(tags[key], tag_counts), clusters[key], w)

    solved = {k for k in problems if k in sft_keys or (k in stats and stats[k].teacher_solved)}
    unsolved_items = [item(k) for k in problems if k not in solved]
    sft_items = [item(k) for k in problems if k in solved]
    if n_prompts > 0:
        n_sft = min(len(sft_items), round(n_prompts * sft_share))
        n_unsolved = min(len(unsolved_items), n_prompts - n_sft)
        n_sft = min(len(sft_items), n_prompts - n_unsolved)  # fill from SFT when unsolved run short
    else:  # every eligible problem once (a share of few unsolved ones would leave GRPO almost nothing)
        n_unsolved, n_sft = len(unsolved_items), len(sft_items)
    chosen = [(it, "unsolved") for it in diversity_sample(unsolved_items, n_unsolved, seed)]
    chosen += [(it, "sft") for it in diversity_sample(sft_items, n_sft, seed + 1)]
    rows = []
    for it, origin in chosen:
        p = problems[it.key]
        s = stats.get(it.key)
        rows.append({
            "prompt": build_messages(p.reference_source, problem_instruction(p)),
            "reference": p.reference_source,
            "licence": p.licence,
            "problem_key": p.key,
            "name": p.name,
            "op_tags": tags[it.key],
            "category": it.category,
            "cluster": it.cluster,
            "weight": it.weight,
            "pass_rate": None if s is None else s.pass_rate,
            "origin": origin,
            "split": splits[it.key],
            "prompt_version": PROMPT_VERSION,
        })
    return rows


def split_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """{"train": n, "validation": m} of a row list."""
    return dict(Counter(r["split"] for r in rows))
